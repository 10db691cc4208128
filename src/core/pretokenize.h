/* Pre-tokenization of the preset patterns (gpt2, cl100k, o200k), by hand.
 *
 * Each scanner returns the end of the chunk that starts at `i`: exactly the
 * match `regex.findall(pattern, text)` finds there.  The patterns are
 * alternations tried in order (leftmost-first), so each function below tries
 * the alternatives in the pattern's order and, where an alternative could
 * backtrack, works out in closed form which of its backtracking choices
 * succeeds first.  Every code point belongs to exactly one of LETTER, NUMBER,
 * SPACE (\s) and OTHER, and each pattern has an alternative for each of them,
 * so chunks partition the text.  The pure-Python reference is the `regex`
 * module itself (bpefst/tokenizer/pretokenize.py PRESETS);
 * tests/test_native_pretokenize.py compares the two exhaustively on short
 * strings and on generated text of every script.
 */
#ifndef BPEFST_PRETOKENIZE_H
#define BPEFST_PRETOKENIZE_H

#include <stddef.h>
#include <stdint.h>
#include "unicode_classes.h"

enum { PATTERN_NONE = 0, PATTERN_GPT2 = 1, PATTERN_CL100K = 2, PATTERN_O200K = 3 };

#define CLASS_LETTER (CLASS_LU | CLASS_LL | CLASS_LT | CLASS_LM | CLASS_LO)
/* o200k's two letter classes: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and [\p{Ll}\p{Lm}\p{Lo}\p{M}] */
#define CLASS_UPPERISH (CLASS_LU | CLASS_LT | CLASS_LM | CLASS_LO | CLASS_MARK)
#define CLASS_LOWERISH (CLASS_LL | CLASS_LM | CLASS_LO | CLASS_MARK)

/* A text as CPython stores it: 1, 2 or 4 bytes per code point. */
typedef struct {
    int kind;
    const void *data;
    size_t length;
} Text;

static inline uint32_t code_at(const Text *t, size_t i) {
    switch (t->kind) {
    case 1: return ((const uint8_t *)t->data)[i];
    case 2: return ((const uint16_t *)t->data)[i];
    default: return ((const uint32_t *)t->data)[i];
    }
}

static inline unsigned class_at(const Text *t, size_t i) { return unicode_class(code_at(t, i)); }

/* The four exclusive kinds of code point the patterns distinguish. */
enum { KIND_LETTER, KIND_NUMBER, KIND_SPACE, KIND_OTHER };

static inline int kind_of(unsigned cls) {
    if (cls & CLASS_LETTER) return KIND_LETTER;
    if (cls & CLASS_NUMBER) return KIND_NUMBER;
    if (cls & CLASS_SPACE) return KIND_SPACE;
    return KIND_OTHER;
}

static inline int kind_at(const Text *t, size_t i) { return kind_of(class_at(t, i)); }

static inline size_t run_of_kind(const Text *t, size_t i, int kind) {
    while (i < t->length && kind_at(t, i) == kind) i++;
    return i;
}

static inline size_t run_of_class(const Text *t, size_t i, unsigned mask) {
    while (i < t->length && (class_at(t, i) & mask)) i++;
    return i;
}

/* \p{N}{1,3}: at most three numbers (looking no further, or a long run of digits would cost its length per chunk) */
static inline size_t digits_end(const Text *t, size_t i) {
    size_t end = i + 1;
    while (end < t->length && end < i + 3 && kind_at(t, end) == KIND_NUMBER) end++;
    return end;
}

static inline int is_line_break(uint32_t c) { return c == '\r' || c == '\n'; }

/* The `regex` module's case-insensitive match of an ASCII letter: the letter,
 * its capital, and for 's' also U+017F LATIN SMALL LETTER LONG S. */
static inline uint32_t folded(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c == 0x17F) return 's';
    return c;
}

/* The end of a contraction ('s 't 're 've 'm 'll 'd) at i, or 0 when there is none. */
static inline size_t contraction_end(const Text *t, size_t i, int ignore_case) {
    size_t n = t->length;
    if (i + 1 >= n || code_at(t, i) != '\'') return 0;
    uint32_t a = code_at(t, i + 1);
    if (ignore_case) a = folded(a);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 >= n) return 0;
    uint32_t b = code_at(t, i + 2);
    if (ignore_case) b = folded(b);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    return 0;
}

/* The whitespace alternatives at i, a SPACE code point, once the others failed.
 * `end_first`: cl100k tries \s++$ (the run reaches the end) before \s*[\r\n];
 * `line_breaks`: cl100k's \s*[\r\n] and o200k's \s*[\r\n]+ end after the
 * run's last line break (the greedy \s* gives back characters up to it).
 * Then \s+(?!\S): the run at the end of the text, or the run less its last
 * character (a non-space follows); a run of one is left to \s / \s+. */
static inline size_t whitespace_end(const Text *t, size_t i, int line_breaks, int end_first) {
    size_t j = run_of_kind(t, i, KIND_SPACE);
    if (end_first && j == t->length) return j;
    if (line_breaks) {
        for (size_t k = j; k > i; k--)
            if (is_line_break(code_at(t, k - 1))) return k;
    }
    if (j == t->length || j - i < 2) return j;
    return j - 1;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t gpt2_end(const Text *t, size_t i) {
    size_t end = contraction_end(t, i, 0);
    if (end) return end;
    size_t s = i;
    if (code_at(t, i) == ' ' && i + 1 < t->length && kind_at(t, i + 1) != KIND_SPACE) s = i + 1;
    int kind = kind_at(t, s);
    if (kind != KIND_SPACE) return run_of_kind(t, s, kind);
    return whitespace_end(t, i, 0, 0);
}

/* '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s */
static size_t cl100k_end(const Text *t, size_t i) {
    size_t n = t->length;
    size_t end = contraction_end(t, i, 1);
    if (end) return end;
    uint32_t c = code_at(t, i);
    int kind = kind_at(t, i);
    if (kind == KIND_LETTER) return run_of_kind(t, i, KIND_LETTER);
    if (kind != KIND_NUMBER && !is_line_break(c) && i + 1 < n && kind_at(t, i + 1) == KIND_LETTER)
        return run_of_kind(t, i + 1, KIND_LETTER);
    if (kind == KIND_NUMBER) return digits_end(t, i);
    size_t s = (c == ' ' && i + 1 < n && kind_at(t, i + 1) == KIND_OTHER) ? i + 1 : i;
    if (kind_at(t, s) == KIND_OTHER) {
        end = run_of_kind(t, s, KIND_OTHER);
        while (end < n && is_line_break(code_at(t, end))) end++;
        return end;
    }
    return whitespace_end(t, i, 1, 1);
}

/* o200k's first alternative from s (after the optional prefix):
 * [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+, or 0.
 * The greedy upper run gives back characters until a lower-ish one can start:
 * at its end when an \p{Ll} follows (then the lower run goes on), else at its
 * last \p{Lm}\p{Lo}\p{M}, which ends the match (the characters after it in the
 * run are \p{Lu}\p{Lt}, not lower-ish). */
static size_t o200k_lower_end(const Text *t, size_t s) {
    size_t upper_end = run_of_class(t, s, CLASS_UPPERISH);
    if (upper_end < t->length && (class_at(t, upper_end) & CLASS_LL)) return run_of_class(t, upper_end, CLASS_LOWERISH);
    for (size_t k = upper_end; k > s; k--)
        if (class_at(t, k - 1) & CLASS_LOWERISH) return k;
    return 0;
}

/* o200k's second alternative from s: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*, or 0. */
static size_t o200k_upper_end(const Text *t, size_t s) {
    if (s >= t->length || !(class_at(t, s) & CLASS_UPPERISH)) return 0;
    return run_of_class(t, run_of_class(t, s, CLASS_UPPERISH), CLASS_LOWERISH);
}

/* [^\r\n\p{L}\p{N}]?(upper)*(lower)+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
 * |[^\r\n\p{L}\p{N}]?(upper)+(lower)*(?i:...)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t o200k_end(const Text *t, size_t i) {
    size_t n = t->length, end = 0;
    uint32_t c = code_at(t, i);
    unsigned cls = class_at(t, i);
    int kind = kind_of(cls);
    /* the optional prefix [^\r\n\p{L}\p{N}] is tried first (greedy), then without it */
    int prefix = kind != KIND_LETTER && kind != KIND_NUMBER && !is_line_break(c) && i + 1 < n;
    if (prefix) end = o200k_lower_end(t, i + 1);
    if (!end) end = o200k_lower_end(t, i);
    if (!end && prefix) end = o200k_upper_end(t, i + 1);
    if (!end) end = o200k_upper_end(t, i);
    if (end) {
        size_t after = contraction_end(t, end, 1);
        return after ? after : end;
    }
    if (kind == KIND_NUMBER) return digits_end(t, i);
    size_t s = (c == ' ' && i + 1 < n && kind_at(t, i + 1) == KIND_OTHER) ? i + 1 : i;
    if (kind_at(t, s) == KIND_OTHER) {
        end = run_of_kind(t, s, KIND_OTHER);
        while (end < n) {
            uint32_t d = code_at(t, end);
            if (!is_line_break(d) && d != '/') break;
            end++;
        }
        return end;
    }
    return whitespace_end(t, i, 1, 0);
}

/* The end of the chunk starting at i (< length) under `pattern`. */
static inline size_t chunk_end(int pattern, const Text *t, size_t i) {
    switch (pattern) {
    case PATTERN_GPT2: return gpt2_end(t, i);
    case PATTERN_CL100K: return cl100k_end(t, i);
    case PATTERN_O200K: return o200k_end(t, i);
    default: return t->length;
    }
}

#endif
