"""Which encoding an OpenAI model uses: ``bpefst.encoding_for_model("gpt-4o")``.

The table is tiktoken's (``tiktoken/model.py``, version 0.14): exact model
names first, then name prefixes, so that a dated or fine-tuned variant
(``gpt-4o-2024-05-13``, ``ft:gpt-4o:org::id``) finds its family.  The
encoding itself is then found by name on bpefst's search path
(:func:`bpefst.registry.get_encoding`), never downloaded: a model whose
encoding file is not installed gets the error that says where bpefst looked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import ArgumentTypeError, UnknownModelError

if TYPE_CHECKING:
    from .pipeline.encoder import Tokenizer

O200K, CL100K, P50K, R50K = "o200k_base", "cl100k_base", "p50k_base", "r50k_base"

MODEL_TO_ENCODING: dict[str, str] = {
    # reasoning and chat
    "o1": O200K, "o3": O200K, "o4-mini": O200K,
    "gpt-5": O200K, "gpt-4.1": O200K, "gpt-4o": O200K,
    "gpt-4": CL100K, "gpt-3.5-turbo": CL100K, "gpt-3.5": CL100K, "gpt-35-turbo": CL100K,
    # base and embeddings
    "davinci-002": CL100K, "babbage-002": CL100K,
    "text-embedding-ada-002": CL100K, "text-embedding-3-small": CL100K, "text-embedding-3-large": CL100K,
    # deprecated text, code and edit models
    "text-davinci-003": P50K, "text-davinci-002": P50K,
    "text-davinci-001": R50K, "text-curie-001": R50K, "text-babbage-001": R50K, "text-ada-001": R50K,
    "davinci": R50K, "curie": R50K, "babbage": R50K, "ada": R50K,
    "code-davinci-002": P50K, "code-davinci-001": P50K, "code-cushman-002": P50K, "code-cushman-001": P50K,
    "davinci-codex": P50K, "cushman-codex": P50K,
    "text-davinci-edit-001": "p50k_edit", "code-davinci-edit-001": "p50k_edit",
    # deprecated embeddings
    **dict.fromkeys([f"text-similarity-{m}-001" for m in ("davinci", "curie", "babbage", "ada")], R50K),
    **dict.fromkeys([f"text-search-{m}-doc-001" for m in ("davinci", "curie", "babbage", "ada")], R50K),
    "code-search-babbage-code-001": R50K, "code-search-ada-code-001": R50K,
    # open models
    "gpt2": "gpt2", "gpt-2": "gpt2",
}

# Tried in this order after the exact names; the first that starts the name wins ("ft:gpt-4o"
# must come before "ft:gpt-4").
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    "o1-": O200K, "o3-": O200K, "o4-mini-": O200K,
    "gpt-5": O200K, "gpt-4.5-": O200K, "gpt-4.1-": O200K, "chatgpt-4o-": O200K, "gpt-4o-": O200K,
    "gpt-4-": CL100K, "gpt-3.5-turbo-": CL100K, "gpt-35-turbo-": CL100K,
    "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": O200K, "ft:gpt-4": CL100K, "ft:gpt-3.5-turbo": CL100K,
    "ft:davinci-002": CL100K, "ft:babbage-002": CL100K,
}


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding ``model_name`` uses; a KeyError (:class:`~bpefst.errors.UnknownModelError`) if unknown."""
    if not isinstance(model_name, str):
        raise ArgumentTypeError(f"encoding_name_for_model() takes a model name (str), not {type(model_name).__name__}")
    found = MODEL_TO_ENCODING.get(model_name)
    if found is not None:
        return found
    for prefix, name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise UnknownModelError(f"no encoding is known for the model {model_name!r}; name the encoding instead, "
                            f"e.g. bpefst.get_encoding('o200k_base')")


def encoding_for_model(model_name: str) -> "Tokenizer":
    """The encoding ``model_name`` uses, found by name on bpefst's search path (see :func:`bpefst.get_encoding`)."""
    from .registry import get_encoding

    return get_encoding(encoding_name_for_model(model_name))
