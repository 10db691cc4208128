"""Layer 7b: counting and tokenizing on a Ray cluster (issue 19).

One machine's counting (:mod:`bpefst.training.counting`) and tokenizing
(:mod:`bpefst.pipeline`) run unchanged inside Ray workers; this package only
decides what each worker reads and what comes back to the driver:

* :mod:`.cluster` connects to Ray (an optional dependency, imported lazily);
* :mod:`.counting` counts chunks: files split into byte ranges that workers read
  themselves, or the rows of a Ray Dataset; the driver sums the tables
  (:mod:`bpefst.training.counts`) and nothing else;
* :mod:`.tokenizing` tokenizes the rows of a Ray Dataset with one tokenizer per
  worker, loaded from its artifact bytes.

The public entry points are re-exported by :mod:`bpefst.ray`.
"""
