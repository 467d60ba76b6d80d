/*
 * loopscope.analyses._linescan: the native fast path of the records loader.
 *
 * It splits a buffer of JSON Lines into lines, numbers them, and recognises
 * the lines that are plain loopscope records: one JSON object with valid
 * UTF-8, "v":1, a known "kind", each known field at most once and of its
 * JSON type (string, number, true/false, object, or null), numbers within
 * bounds, no escaped keys, nesting at most MAX_DEPTH deep. For those it
 * hands DuckDB the values (strings decoded, numbers and booleans as written,
 * objects as their JSON text) through the Arrow C stream interface; every
 * other line is reported back ("rejected") for the full validation in SQL,
 * which names the problem. The range and value checks (timestamps, integer
 * ranges, the outcome set, required fields) stay in SQL, in
 * analyses/ingest/native.py, so there is one definition of them.
 *
 * Being strict is what makes this safe: a line is accepted only if it is
 * valid RFC 8259 JSON that every JSON parser reads the same way, so the
 * values given to DuckDB are the ones the full validation would have read.
 * Anything unusual (lone surrogates, \u0000, huge numbers, duplicate keys,
 * escaped keys, deep nesting, control bytes) is simply left to the full
 * validation. tests/test_loader_fast_path.py compares both paths on fuzzed
 * lines.
 *
 * The scan runs without the GIL on up to MAX_THREADS threads (the buffer is
 * cut at newlines). The Arrow export owns no Python objects: the scanned
 * columns are reference counted in C, so DuckDB may release arrays from any
 * thread.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <locale.h>
#include <math.h>
#ifdef __APPLE__
#include <xlocale.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- Arrow C data interface (https://arrow.apache.org/docs/format/CDataInterface.html) ---- */
#define ARROW_FLAG_NULLABLE 2
struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};
struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};
struct ArrowArrayStream {
    int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
    int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
    const char *(*get_last_error)(struct ArrowArrayStream *);
    void (*release)(struct ArrowArrayStream *);
    void *private_data;
};

/* ---- limits ---- */
#define MAX_FIELDS 64        /* known fields, v and kind excluded */
#define MAX_KINDS 4
#define MAX_UNKNOWN 32       /* unknown keys in one line */
#define MAX_DEPTH 32         /* nesting of objects and arrays */
#define MAX_INT_DIGITS 20    /* digits before the point */
#define MAX_FRAC_DIGITS 40
#define MAX_EXP_DIGITS 3
#define MAX_DECIMAL_EXP 300 /* |value| < 1e301: no parser overflows to infinity */
#define MAX_THREADS 8
#define MAX_FRACTION_DIGITS 30 /* of a timestamp's seconds */
#define BATCH_ROWS 65536
#define BATCH_BYTES (256 * 1024 * 1024) /* keeps int32 string offsets safe */

enum { T_NONE = 0, T_NULL, T_TRUE, T_FALSE, T_NUM, T_STR, T_OBJ, T_ARR };

/* ---- configuration (from Python, once) ---- */
typedef struct {
    int n_fields;
    char *names[MAX_FIELDS];
    size_t name_len[MAX_FIELDS];
    char cls[MAX_FIELDS]; /* s str, o obj (JSON text), i int32, I int64, n double, b bool, t timestamp */
    char required[MAX_FIELDS];
    int64_t lo[MAX_FIELDS], hi[MAX_FIELDS]; /* integer ranges */
    int n_kinds;
    char *kind_names[MAX_KINDS];
    size_t kind_len[MAX_KINDS];
    int kind_n[MAX_KINDS];             /* fields emitted for the kind */
    int kind_fields[MAX_KINDS][MAX_FIELDS];
    uint64_t kind_mask[MAX_KINDS];     /* bit per field that belongs to the kind */
    int kind_pos[MAX_KINDS][MAX_FIELDS]; /* field -> its place in the kind's order, or -1 */
    int64_t max_line;
    signed char hash[256][4];          /* key hash -> field indices */
} Config;

static unsigned key_hash(const char *k, size_t n) {
    return (unsigned)((n * 7u + (unsigned char)k[0] * 3u + (unsigned char)k[n - 1]) & 255u);
}

/* ---- growable byte buffer ---- */
typedef struct {
    char *p;
    int64_t len, cap;
} Bytes;

static int bytes_reserve(Bytes *b, int64_t extra) {
    if (b->len + extra <= b->cap) return 0;
    int64_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->p, (size_t)cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* ---- scanned columns ---- */
typedef struct {
    char cls;          /* the field's class: how the values are stored */
    uint8_t *validity; /* bit per row */
    int32_t *offsets;  /* rows + 1 (strings) */
    Bytes data;        /* string bytes */
    void *fixed;       /* fixed-width values (or the bits of booleans) */
    int64_t nulls;
} Column;

typedef struct Batch {
    int kind;
    int64_t rows;
    int64_t bytes;
    int64_t *line_no;
    int64_t *start; /* byte offset of the line in the buffer */
    int32_t *length;
    int n_cols; /* kind's fields + the line (for unknown fields) */
    Column *cols;
    struct Batch *next;
} Batch;

typedef struct {
    int64_t line_no, start, end;
} Span;

typedef struct {
    Span *p;
    int64_t len, cap;
} Spans;

/* Everything a scan produced; shared by the Python result and the Arrow exports. */
typedef struct {
    int64_t refs;
    int n_kinds;
    int kind_n[MAX_KINDS];
    char *col_names[MAX_KINDS][MAX_FIELDS + 2];
    const char *col_formats[MAX_KINDS][MAX_FIELDS + 2];
    int64_t n_batches[MAX_KINDS];
    Batch **batches[MAX_KINDS];
} Shared;

static void batch_free(Batch *b) {
    if (!b) return;
    for (int c = 0; c < b->n_cols; c++) {
        free(b->cols[c].validity);
        free(b->cols[c].offsets);
        free(b->cols[c].data.p);
        free(b->cols[c].fixed);
    }
    free(b->cols);
    free(b->line_no);
    free(b->start);
    free(b->length);
    free(b);
}

static void shared_decref(Shared *s) {
    if (!s) return;
    if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    for (int k = 0; k < s->n_kinds; k++) {
        for (int64_t i = 0; i < s->n_batches[k]; i++) batch_free(s->batches[k][i]);
        free(s->batches[k]);
        for (int c = 0; c < s->kind_n[k] + 2; c++) free(s->col_names[k][c]);
    }
    free(s);
}

static void shared_incref(Shared *s) { __atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL); }

static int is_text(char cls) { return cls == 's' || cls == 'o'; }

static Batch *batch_new(int kind, int n_cols, const char *classes) {
    Batch *b = calloc(1, sizeof(Batch));
    if (!b) return NULL;
    b->kind = kind;
    b->n_cols = n_cols;
    b->line_no = malloc(sizeof(int64_t) * BATCH_ROWS);
    b->start = malloc(sizeof(int64_t) * BATCH_ROWS);
    b->length = malloc(sizeof(int32_t) * BATCH_ROWS);
    b->cols = calloc((size_t)n_cols, sizeof(Column));
    if (!b->line_no || !b->start || !b->length || !b->cols) goto fail;
    for (int c = 0; c < n_cols; c++) {
        Column *col = &b->cols[c];
        col->cls = classes[c];
        col->validity = calloc(BATCH_ROWS / 8, 1);
        if (!col->validity) goto fail;
        if (is_text(col->cls)) {
            col->offsets = malloc(sizeof(int32_t) * (BATCH_ROWS + 1));
            if (!col->offsets) goto fail;
            col->offsets[0] = 0;
        } else {
            col->fixed = calloc(BATCH_ROWS, col->cls == 'b' ? 1 : 8);
            if (!col->fixed) goto fail;
        }
    }
    return b;
fail:
    batch_free(b);
    return NULL;
}

/* ---- JSON checks ---- */
static inline const char *skip_ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    return p;
}

static inline int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static inline int read_hex4(const char *p, const char *e, unsigned *out) {
    if (e - p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) return -1;
        v = (v << 4) | (unsigned)h;
    }
    *out = v;
    return 0;
}

/* Length of the valid UTF-8 sequence at p (non-ASCII lead byte), or 0. */
static inline int utf8_len(const unsigned char *p, const unsigned char *e) {
    unsigned c = p[0];
    if (c >= 0xC2 && c <= 0xDF) {
        if (e - p >= 2 && (p[1] & 0xC0) == 0x80) return 2;
        return 0;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (e - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
        if (c == 0xED && p[1] > 0x9F) return 0; /* surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (e - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0; /* overlong */
        if (c == 0xF4 && p[1] > 0x8F) return 0; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

/* A JSON string starting at p ('"'); returns the byte after the closing quote
 * or NULL. *escaped says whether it holds a backslash. */
static const char *scan_string(const char *p, const char *e, int *escaped) {
    const unsigned char *q = (const unsigned char *)p + 1, *end = (const unsigned char *)e;
    int esc = 0;
    while (q < end) {
        /* Eight plain bytes at a time: none of '"', '\\', a control byte or a non-ASCII byte. */
        while (end - q >= 8) {
            uint64_t x;
            memcpy(&x, q, 8);
            uint64_t quote = x ^ 0x2222222222222222ULL, bs = x ^ 0x5C5C5C5C5C5C5C5CULL;
            uint64_t hit = ((quote - 0x0101010101010101ULL) & ~quote) | ((bs - 0x0101010101010101ULL) & ~bs) |
                           ((x - 0x2020202020202020ULL) & ~x) | x;
            if (hit & 0x8080808080808080ULL) break;
            q += 8;
        }
        if (q >= end) break;
        unsigned c = *q;
        if (c == '"') {
            *escaped = esc;
            return (const char *)q + 1;
        }
        if (c == '\\') {
            esc = 1;
            if (q + 1 >= end) return NULL;
            unsigned n = q[1];
            if (n == 'u') {
                unsigned v;
                if (read_hex4((const char *)q + 2, e, &v)) return NULL;
                if (v >= 0xDC00 && v <= 0xDFFF) return NULL; /* lone low surrogate */
                if (v >= 0xD800 && v <= 0xDBFF) {
                    unsigned w;
                    if (q + 12 > end || q[6] != '\\' || q[7] != 'u' || read_hex4((const char *)q + 8, e, &w) ||
                        w < 0xDC00 || w > 0xDFFF)
                        return NULL;
                    q += 12;
                } else {
                    q += 6;
                }
                continue;
            }
            if (n == '"' || n == '\\' || n == '/' || n == 'b' || n == 'f' || n == 'n' || n == 'r' || n == 't') {
                q += 2;
                continue;
            }
            return NULL;
        }
        if (c < 0x20) return NULL;
        if (c >= 0x80) {
            int n = utf8_len(q, end);
            if (!n) return NULL;
            q += n;
            continue;
        }
        q++;
    }
    return NULL;
}

/* Decode the JSON string literal [p, e) (quotes included, already checked). */
static int decode_string(const char *p, const char *e, Bytes *out) {
    if (bytes_reserve(out, e - p)) return -1;
    char *w = out->p + out->len;
    const char *q = p + 1, *end = e - 1;
    while (q < end) {
        const char *bs = memchr(q, '\\', (size_t)(end - q));
        if (!bs) {
            memcpy(w, q, (size_t)(end - q));
            w += end - q;
            break;
        }
        memcpy(w, q, (size_t)(bs - q));
        w += bs - q;
        char n = bs[1];
        if (n == 'u') {
            unsigned v = 0, lo = 0xDC00;
            read_hex4(bs + 2, e, &v);
            q = bs + 6;
            if (v >= 0xD800 && v <= 0xDBFF) {
                read_hex4(bs + 8, e, &lo);
                v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
                q = bs + 12;
            }
            if (v < 0x80) {
                *w++ = (char)v;
            } else if (v < 0x800) {
                *w++ = (char)(0xC0 | (v >> 6));
                *w++ = (char)(0x80 | (v & 0x3F));
            } else if (v < 0x10000) {
                *w++ = (char)(0xE0 | (v >> 12));
                *w++ = (char)(0x80 | ((v >> 6) & 0x3F));
                *w++ = (char)(0x80 | (v & 0x3F));
            } else {
                *w++ = (char)(0xF0 | (v >> 18));
                *w++ = (char)(0x80 | ((v >> 12) & 0x3F));
                *w++ = (char)(0x80 | ((v >> 6) & 0x3F));
                *w++ = (char)(0x80 | (v & 0x3F));
            }
            continue;
        }
        switch (n) {
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        default: *w++ = n; break; /* " \ / */
        }
        q = bs + 2;
    }
    out->len = w - out->p;
    return 0;
}

static const char *scan_number(const char *p, const char *e) {
    const char *q = p;
    int int_digits = 1;
    if (q < e && *q == '-') q++;
    if (q >= e) return NULL;
    if (*q == '0') {
        q++;
    } else if (*q >= '1' && *q <= '9') {
        const char *d = q;
        while (q < e && *q >= '0' && *q <= '9') q++;
        int_digits = (int)(q - d);
        if (int_digits > MAX_INT_DIGITS) return NULL;
    } else {
        return NULL;
    }
    if (q < e && *q == '.') {
        const char *d = ++q;
        while (q < e && *q >= '0' && *q <= '9') q++;
        if (q == d || q - d > MAX_FRAC_DIGITS) return NULL;
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        q++;
        int negative = 0;
        if (q < e && (*q == '+' || *q == '-')) negative = *q++ == '-';
        const char *d = q;
        int exp = 0;
        while (q < e && *q >= '0' && *q <= '9') exp = exp * 10 + (*q++ - '0');
        if (q == d || q - d > MAX_EXP_DIGITS) return NULL;
        if (!negative && int_digits - 1 + exp > MAX_DECIMAL_EXP) return NULL;
    }
    return q;
}

static const char *scan_value(const char *p, const char *e, int depth, int *type);

static const char *scan_container(const char *p, const char *e, int depth, int object) {
    if (depth >= MAX_DEPTH) return NULL;
    char close = object ? '}' : ']';
    const char *q = skip_ws(p + 1, e);
    if (q < e && *q == close) return q + 1;
    for (;;) {
        int t, esc;
        if (object) {
            if (q >= e || *q != '"') return NULL;
            q = scan_string(q, e, &esc);
            if (!q) return NULL;
            q = skip_ws(q, e);
            if (q >= e || *q != ':') return NULL;
            q = skip_ws(q + 1, e);
        }
        q = scan_value(q, e, depth + 1, &t);
        if (!q) return NULL;
        q = skip_ws(q, e);
        if (q >= e) return NULL;
        if (*q == close) return q + 1;
        if (*q != ',') return NULL;
        q = skip_ws(q + 1, e);
    }
}

static const char *scan_value(const char *p, const char *e, int depth, int *type) {
    if (p >= e) return NULL;
    int esc;
    switch (*p) {
    case '"': *type = T_STR; return scan_string(p, e, &esc);
    case '{': *type = T_OBJ; return scan_container(p, e, depth, 1);
    case '[': *type = T_ARR; return scan_container(p, e, depth, 0);
    case 't':
        *type = T_TRUE;
        return (e - p >= 4 && memcmp(p, "true", 4) == 0) ? p + 4 : NULL;
    case 'f':
        *type = T_FALSE;
        return (e - p >= 5 && memcmp(p, "false", 5) == 0) ? p + 5 : NULL;
    case 'n':
        *type = T_NULL;
        return (e - p >= 4 && memcmp(p, "null", 4) == 0) ? p + 4 : NULL;
    default:
        *type = T_NUM;
        return scan_number(p, e);
    }
}

/* ---- one line ---- */
typedef struct {
    const char *start[MAX_FIELDS];
    const char *end[MAX_FIELDS];
    int type[MAX_FIELDS];
    int escaped[MAX_FIELDS];
    int64_t ival[MAX_FIELDS]; /* int, timestamp (microseconds, UTC), bool */
    double dval[MAX_FIELDS];
    uint64_t seen;
    int kind;
    int extra; /* unknown fields (or another kind's): the line goes to extra */
} Parsed;

static int type_ok(char cls, int t) {
    if (t == T_NULL) return 1;
    switch (cls) {
    case 's':
    case 't': return t == T_STR;
    case 'i':
    case 'I':
    case 'n': return t == T_NUM;
    case 'b': return t == T_TRUE || t == T_FALSE;
    case 'o': return t == T_OBJ;
    }
    return 0;
}

/* ---- values: the spec's checks, the same as loader_fast_sql.value_checks ---- */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char *s, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* An RFC 3339 timestamp (offset Z, +hh:mm or none: UTC), an existing date and
 * a time below 24:00:00, to microseconds since the epoch in UTC, digits past
 * the microsecond cut off as DuckDB's cast does (tests compare the two).
 * Everything else (leap seconds, 24:00, year 0, offsets over 23:59, over
 * MAX_FRACTION_DIGITS digits) is left to the full validation, whose cast decides. */
static int parse_ts(const char *s, size_t n, int64_t *out) {
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, sec;
    if (n < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' ||
        s[16] != ':')
        return -1;
    if (digits(s, 4, &y) || digits(s + 5, 2, &mo) || digits(s + 8, 2, &d) || digits(s + 11, 2, &h) ||
        digits(s + 14, 2, &mi) || digits(s + 17, 2, &sec))
        return -1;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59) return -1;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] + (mo == 2 && leap)) return -1;
    size_t i = 19;
    int64_t frac = 0;
    if (i < n && s[i] == '.') {
        int nd = 0;
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, nd++)
            if (nd < 6) frac = frac * 10 + (s[i] - '0'); /* DuckDB's cast truncates past microseconds */
        if (nd == 0 || nd > MAX_FRACTION_DIGITS) return -1;
        for (; nd < 6; nd++) frac *= 10;
    }
    int64_t off = 0;
    if (i == n) {
        /* no offset: UTC, as the store's connections read it (TimeZone UTC) */
    } else if (i + 1 == n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i + 6 == n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        int oh, om;
        if (digits(s + i + 1, 2, &oh) || digits(s + i + 4, 2, &om) || oh > 23 || om > 59) return -1;
        off = (int64_t)(oh * 60 + om) * 60 * 1000000;
        if (s[i] == '-') off = -off;
        i += 6;
    } else {
        return -1;
    }
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    *out = secs * 1000000 + frac - off;
    return 0;
}

static locale_t c_locale;

static int convert(const Config *cfg, int f, const char *vs, const char *ve, Parsed *r) {
    char cls = cfg->cls[f];
    size_t n = (size_t)(ve - vs);
    if (cls == 'i' || cls == 'I') {
        /* plain digits, checked in parse_line; at most MAX_INT_DIGITS */
        int neg = vs[0] == '-';
        __int128 v = 0;
        for (const char *d = vs + neg; d < ve; d++) v = v * 10 + (*d - '0');
        if (neg) v = -v;
        if (v < cfg->lo[f] || v > cfg->hi[f]) return -1;
        r->ival[f] = (int64_t)v;
    } else if (cls == 'n') {
        char tmp[96];
        if (n >= sizeof(tmp)) return -1;
        memcpy(tmp, vs, n);
        tmp[n] = 0;
        double v = strtod_l(tmp, NULL, c_locale);
        if (!isfinite(v)) return -1;
        /* JSON readers take an integer spelling as an integer: -0 is 0, not -0.0 */
        if (v == 0 && !memchr(vs, '.', n) && !memchr(vs, 'e', n) && !memchr(vs, 'E', n)) v = 0.0;
        r->dval[f] = v;
    } else if (cls == 'b') {
        r->ival[f] = vs[0] == 't';
    } else if (cls == 't') {
        if (r->escaped[f] || parse_ts(vs + 1, n - 2, &r->ival[f])) return -1;
    }
    return 0;
}

/* 0: a plain record (in *r); -1: leave the line to the full validation. */
static int parse_line(const Config *cfg, const char *p, const char *e, Parsed *r) {
    const char *unk[MAX_UNKNOWN];
    size_t unk_len[MAX_UNKNOWN];
    int n_unk = 0, seen_v = 0;
    r->seen = 0;
    r->kind = -1;
    r->extra = 0;
    const char *q = skip_ws(p, e);
    if (q >= e || *q != '{') return -1;
    q = skip_ws(q + 1, e);
    if (q < e && *q == '}') return -1;
    int next = 0; /* where in the kind's order the next key probably is */
    for (;;) {
        int esc = 0, t, f = -2;
        if (q >= e || *q != '"') return -1;
        const char *ks = q + 1;
        size_t kl;
        if (r->kind >= 0 && next < cfg->kind_n[r->kind]) {
            /* Writers keep one order: try the expected key first (names are plain, no escapes). */
            int pf = cfg->kind_fields[r->kind][next];
            size_t nl = cfg->name_len[pf];
            if ((size_t)(e - ks) > nl && ks[nl] == '"' && memcmp(ks, cfg->names[pf], nl) == 0) {
                f = pf;
                kl = nl;
                q = ks + nl + 1;
            }
        }
        if (f == -2) {
            q = scan_string(q, e, &esc);
            if (!q || esc) return -1; /* an escaped key could spell a known one */
            kl = (size_t)(q - 1 - ks);
        }
        q = skip_ws(q, e);
        if (q >= e || *q != ':') return -1;
        const char *vs = skip_ws(q + 1, e);
        q = scan_value(vs, e, 0, &t);
        if (!q) return -1;
        const char *ve = q;
        if (kl == 1 && ks[0] == 'v') {
            if (seen_v || t != T_NUM || ve - vs != 1 || vs[0] != '1') return -1;
            seen_v = 1;
        } else if (kl == 4 && memcmp(ks, "kind", 4) == 0) {
            if (r->kind >= 0 || t != T_STR) return -1;
            for (int k = 0; k < cfg->n_kinds; k++)
                if ((size_t)(ve - vs - 2) == cfg->kind_len[k] && memcmp(vs + 1, cfg->kind_names[k], cfg->kind_len[k]) == 0)
                    r->kind = k;
            if (r->kind < 0) return -1;
        } else {
            if (f == -2) f = -1;
            if (f == -1 && kl > 0) {
                const signed char *cands = cfg->hash[key_hash(ks, kl)];
                for (int i = 0; i < 4 && cands[i] >= 0; i++)
                    if (cfg->name_len[cands[i]] == kl && memcmp(cfg->names[cands[i]], ks, kl) == 0) {
                        f = cands[i];
                        break;
                    }
            }
            if (f >= 0) {
                if (r->seen & ((uint64_t)1 << f)) return -1; /* a key twice */
                r->seen |= (uint64_t)1 << f;
                r->start[f] = vs;
                r->end[f] = ve;
                r->type[f] = t;
                r->escaped[f] = 0;
                if (t == T_STR) r->escaped[f] = memchr(vs, '\\', (size_t)(ve - vs)) != NULL;
                if (r->kind >= 0 && cfg->kind_pos[r->kind][f] >= 0) next = cfg->kind_pos[r->kind][f] + 1;
            } else {
                for (int i = 0; i < n_unk; i++)
                    if (unk_len[i] == kl && memcmp(unk[i], ks, kl) == 0) return -1; /* a key twice */
                if (n_unk == MAX_UNKNOWN) return -1;
                unk[n_unk] = ks;
                unk_len[n_unk++] = kl;
            }
        }
        q = skip_ws(q, e);
        if (q >= e) return -1;
        if (*q == '}') break;
        if (*q != ',') return -1;
        q = skip_ws(q + 1, e);
    }
    q = skip_ws(q + 1, e);
    if (q != e || !seen_v || r->kind < 0) return -1;
    uint64_t mask = cfg->kind_mask[r->kind];
    for (int i = 0; i < cfg->kind_n[r->kind]; i++) {
        int f = cfg->kind_fields[r->kind][i];
        if (!(r->seen & ((uint64_t)1 << f)) || r->type[f] == T_NULL) {
            if (cfg->required[f]) return -1;
            continue;
        }
        if (!type_ok(cfg->cls[f], r->type[f])) return -1;
        if ((cfg->cls[f] == 'i' || cfg->cls[f] == 'I') && r->type[f] == T_NUM) {
            /* Integers as plain digits only: parsers differ on -0, 1.0 and 1e2. */
            if (r->start[f][0] == '-' && r->start[f][1] == '0') return -1;
            for (const char *d = r->start[f]; d < r->end[f]; d++)
                if (*d == '.' || *d == 'e' || *d == 'E') return -1;
        }
        if (convert(cfg, f, r->start[f], r->end[f], r)) return -1;
    }
    r->extra = n_unk > 0 || (r->seen & ~mask) != 0;
    return 0;
}

/* ---- per-thread scan ---- */
typedef struct {
    const Config *cfg;
    const char *base; /* the whole buffer (offsets are relative to it) */
    const char *p, *e; /* this segment */
    int64_t lines;
    Batch *head[MAX_KINDS], *tail[MAX_KINDS];
    int64_t n_batches[MAX_KINDS];
    int64_t accepted[MAX_KINDS];
    Spans rejected;
    int failed; /* out of memory */
} Segment;

static int reject(Segment *s, int64_t line, int64_t a, int64_t b) {
    Spans *r = &s->rejected;
    if (r->len == r->cap) {
        int64_t cap = r->cap ? r->cap * 2 : 256;
        Span *np = realloc(r->p, sizeof(Span) * (size_t)cap);
        if (!np) return -1;
        r->p = np;
        r->cap = cap;
    }
    r->p[r->len].line_no = line;
    r->p[r->len].start = a;
    r->p[r->len].end = b;
    r->len++;
    return 0;
}

static int put(Column *c, int64_t row, const char *p, int64_t n) {
    if (p) {
        if (n) {
            if (bytes_reserve(&c->data, n)) return -1;
            memcpy(c->data.p + c->data.len, p, (size_t)n);
            c->data.len += n;
        }
        c->validity[row >> 3] |= (uint8_t)(1u << (row & 7));
    } else {
        c->nulls++;
    }
    c->offsets[row + 1] = (int32_t)c->data.len;
    return 0;
}

static int emit(Segment *s, const Parsed *r, int64_t line, const char *p, const char *e) {
    const Config *cfg = s->cfg;
    int k = r->kind;
    int64_t len = e - p;
    Batch *b = s->tail[k];
    if (!b || b->rows == BATCH_ROWS || b->bytes + len > BATCH_BYTES) {
        char classes[MAX_FIELDS + 1];
        for (int i = 0; i < cfg->kind_n[k]; i++) classes[i] = cfg->cls[cfg->kind_fields[k][i]];
        classes[cfg->kind_n[k]] = 's';
        Batch *nb = batch_new(k, cfg->kind_n[k] + 1, classes);
        if (!nb) return -1;
        if (b) b->next = nb; else s->head[k] = nb;
        s->tail[k] = b = nb;
        s->n_batches[k]++;
    }
    int64_t row = b->rows;
    b->line_no[row] = line;
    b->start[row] = p - s->base;
    b->length[row] = (int32_t)len;
    for (int i = 0; i < cfg->kind_n[k]; i++) {
        int f = cfg->kind_fields[k][i];
        Column *c = &b->cols[i];
        if (!is_text(c->cls)) {
            if (!(r->seen & ((uint64_t)1 << f)) || r->type[f] == T_NULL) {
                c->nulls++;
            } else {
                c->validity[row >> 3] |= (uint8_t)(1u << (row & 7));
                if (c->cls == 'b') {
                    if (r->ival[f]) ((uint8_t *)c->fixed)[row >> 3] |= (uint8_t)(1u << (row & 7));
                } else if (c->cls == 'i') {
                    ((int32_t *)c->fixed)[row] = (int32_t)r->ival[f];
                } else if (c->cls == 'n') {
                    ((double *)c->fixed)[row] = r->dval[f];
                } else {
                    ((int64_t *)c->fixed)[row] = r->ival[f];
                }
            }
            continue;
        }
        if (!(r->seen & ((uint64_t)1 << f)) || r->type[f] == T_NULL) {
            if (put(c, row, NULL, 0)) return -1;
        } else if (r->type[f] == T_STR) {
            if (r->escaped[f]) {
                if (decode_string(r->start[f], r->end[f], &c->data)) return -1;
                c->validity[row >> 3] |= (uint8_t)(1u << (row & 7));
                c->offsets[row + 1] = (int32_t)c->data.len;
            } else if (put(c, row, r->start[f] + 1, r->end[f] - r->start[f] - 2)) {
                return -1;
            }
        } else if (put(c, row, r->start[f], r->end[f] - r->start[f])) {
            return -1;
        }
    }
    if (put(&b->cols[cfg->kind_n[k]], row, r->extra ? p : NULL, len)) return -1;
    b->rows++;
    b->bytes += len;
    s->accepted[k]++;
    return 0;
}

static void *scan_segment(void *arg) {
    Segment *s = arg;
    const char *p = s->p, *e = s->e;
    int64_t line = 0;
    Parsed r;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *le = nl ? nl : e;
        line++;
        int ok = (le - p) <= s->cfg->max_line && parse_line(s->cfg, p, le, &r) == 0;
        if (ok ? emit(s, &r, line, p, le) : reject(s, line, p - s->base, le - s->base)) {
            s->failed = 1;
            break;
        }
        p = nl ? nl + 1 : e;
    }
    s->lines = line;
    return NULL;
}

/* ---- Arrow export ---- */
typedef struct {
    Shared *shared;
    const void *buffers[3];
} ChildPrivate;

typedef struct {
    Shared *shared;
    int n;
    const void *buffers[1]; /* the struct array's validity: none */
    struct ArrowArray *child_ptrs[MAX_FIELDS + 2];
    struct ArrowArray children[MAX_FIELDS + 2];
} ParentPrivate;

static void release_child(struct ArrowArray *a) {
    ChildPrivate *cp = a->private_data;
    shared_decref(cp->shared);
    free(cp);
    a->release = NULL;
}

static void release_parent(struct ArrowArray *a) {
    ParentPrivate *pp = a->private_data;
    for (int i = 0; i < pp->n; i++)
        if (pp->children[i].release) pp->children[i].release(&pp->children[i]);
    shared_decref(pp->shared);
    free(pp);
    a->release = NULL;
}

static int export_child(Shared *sh, struct ArrowArray *out, int64_t rows, int64_t nulls, const void *b0, const void *b1,
                        const void *b2, int n_buffers) {
    ChildPrivate *cp = malloc(sizeof(ChildPrivate));
    if (!cp) return -1;
    shared_incref(sh);
    cp->shared = sh;
    cp->buffers[0] = b0;
    cp->buffers[1] = b1;
    cp->buffers[2] = b2;
    memset(out, 0, sizeof(*out));
    out->length = rows;
    out->null_count = nulls;
    out->n_buffers = n_buffers;
    out->buffers = cp->buffers;
    out->release = release_child;
    out->private_data = cp;
    return 0;
}

static int export_batch(Shared *sh, const Batch *b, struct ArrowArray *out) {
    ParentPrivate *pp = calloc(1, sizeof(ParentPrivate));
    if (!pp) return -1;
    shared_incref(sh);
    pp->shared = sh;
    pp->n = 1 + b->n_cols;
    int bad = export_child(sh, &pp->children[0], b->rows, 0, NULL, b->line_no, NULL, 2);
    for (int c = 0; c < b->n_cols && !bad; c++) {
        const Column *col = &b->cols[c];
        if (is_text(col->cls))
            bad = export_child(sh, &pp->children[c + 1], b->rows, col->nulls, col->nulls ? col->validity : NULL,
                               col->offsets, col->data.p ? col->data.p : "", 3);
        else
            bad = export_child(sh, &pp->children[c + 1], b->rows, col->nulls, col->nulls ? col->validity : NULL,
                               col->fixed, NULL, 2);
    }
    for (int i = 0; i < pp->n; i++) pp->child_ptrs[i] = &pp->children[i];
    memset(out, 0, sizeof(*out));
    out->length = b->rows;
    out->n_buffers = 1;
    pp->buffers[0] = NULL;
    out->buffers = pp->buffers;
    out->n_children = pp->n;
    out->children = pp->child_ptrs;
    out->release = release_parent;
    out->private_data = pp;
    if (bad) {
        release_parent(out);
        return -1;
    }
    return 0;
}

typedef struct {
    Shared *shared; /* the column names live there: a schema may outlive the stream */
} SchemaPrivate;

static void release_schema(struct ArrowSchema *s) {
    for (int64_t i = 0; i < s->n_children; i++) {
        struct ArrowSchema *c = s->children[i];
        if (c->release) c->release(c);
    }
    SchemaPrivate *sp = s->private_data; /* at the start of the block with the children */
    shared_decref(sp->shared);
    free(sp);
    s->release = NULL;
}

static void release_child_schema(struct ArrowSchema *s) { s->release = NULL; }

static int export_schema(Shared *sh, int k, struct ArrowSchema *out) {
    int n = sh->kind_n[k] + 2;
    size_t size = sizeof(SchemaPrivate) + sizeof(struct ArrowSchema *) * (size_t)n + sizeof(struct ArrowSchema) * (size_t)n;
    SchemaPrivate *block = calloc(1, size);
    if (!block) return -1;
    shared_incref(sh);
    block->shared = sh;
    struct ArrowSchema **ptrs = (struct ArrowSchema **)(block + 1);
    struct ArrowSchema *kids = (struct ArrowSchema *)(ptrs + n);
    for (int i = 0; i < n; i++) {
        ptrs[i] = &kids[i];
        kids[i].format = sh->col_formats[k][i];
        kids[i].name = sh->col_names[k][i];
        kids[i].flags = ARROW_FLAG_NULLABLE;
        kids[i].release = release_child_schema;
    }
    memset(out, 0, sizeof(*out));
    out->format = "+s";
    out->name = "";
    out->n_children = n;
    out->children = ptrs;
    out->release = release_schema;
    out->private_data = block;
    return 0;
}

typedef struct {
    Shared *shared;
    int kind;
    int64_t next;
} StreamPrivate;

static int stream_schema(struct ArrowArrayStream *st, struct ArrowSchema *out) {
    StreamPrivate *sp = st->private_data;
    return export_schema(sp->shared, sp->kind, out) ? 12 /* ENOMEM */ : 0;
}

static int stream_next(struct ArrowArrayStream *st, struct ArrowArray *out) {
    StreamPrivate *sp = st->private_data;
    if (sp->next >= sp->shared->n_batches[sp->kind]) {
        memset(out, 0, sizeof(*out)); /* release == NULL: end of stream */
        return 0;
    }
    return export_batch(sp->shared, sp->shared->batches[sp->kind][sp->next++], out) ? 12 : 0;
}

static const char *stream_error(struct ArrowArrayStream *st) {
    (void)st;
    return "out of memory";
}

static void stream_release(struct ArrowArrayStream *st) {
    StreamPrivate *sp = st->private_data;
    shared_decref(sp->shared);
    free(sp);
    st->release = NULL;
}

/* ---- Python objects ---- */
typedef struct {
    PyObject_HEAD
    Config cfg;
} ScannerObject;

typedef struct {
    PyObject_HEAD
    Shared *shared;
    int64_t lines;
    int64_t accepted[MAX_KINDS];
    PyObject *rejected; /* list of (line_no, start, end) */
} ResultObject;

typedef struct {
    PyObject_HEAD
    Shared *shared;
    int kind;
} StreamObject;

static PyTypeObject ScannerType, ResultType, StreamType;

static void capsule_free_stream(PyObject *cap) {
    struct ArrowArrayStream *st = PyCapsule_GetPointer(cap, "arrow_array_stream");
    if (st) {
        if (st->release) st->release(st);
        free(st);
    }
}

static PyObject *stream_capsule(StreamObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"requested_schema", NULL};
    PyObject *requested = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", kwlist, &requested)) return NULL;
    struct ArrowArrayStream *st = calloc(1, sizeof(*st));
    StreamPrivate *sp = calloc(1, sizeof(*sp));
    if (!st || !sp) {
        free(st);
        free(sp);
        return PyErr_NoMemory();
    }
    shared_incref(self->shared);
    sp->shared = self->shared;
    sp->kind = self->kind;
    st->get_schema = stream_schema;
    st->get_next = stream_next;
    st->get_last_error = stream_error;
    st->release = stream_release;
    st->private_data = sp;
    PyObject *cap = PyCapsule_New(st, "arrow_array_stream", capsule_free_stream);
    if (!cap) {
        stream_release(st);
        free(st);
    }
    return cap;
}

static void stream_dealloc(StreamObject *self) {
    shared_decref(self->shared);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef stream_methods[] = {
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))stream_capsule, METH_VARARGS | METH_KEYWORDS,
     "The scanned rows of one kind as an Arrow C stream (PyCapsule)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject StreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "loopscope.analyses._linescan.Rows",
    .tp_basicsize = sizeof(StreamObject),
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The accepted rows of one kind; DuckDB reads them through __arrow_c_stream__ (repeatably).",
    .tp_methods = stream_methods,
};

static void result_dealloc(ResultObject *self) {
    shared_decref(self->shared);
    Py_XDECREF(self->rejected);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *result_rows(ResultObject *self, PyObject *arg) {
    long k = PyLong_AsLong(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0 || k >= self->shared->n_kinds) {
        PyErr_SetString(PyExc_IndexError, "no such kind");
        return NULL;
    }
    StreamObject *s = PyObject_New(StreamObject, &StreamType);
    if (!s) return NULL;
    shared_incref(self->shared);
    s->shared = self->shared;
    s->kind = (int)k;
    return (PyObject *)s;
}

static PyObject *result_span(ResultObject *self, PyObject *arg) {
    long long line = PyLong_AsLongLong(arg);
    if (line == -1 && PyErr_Occurred()) return NULL;
    Shared *sh = self->shared;
    for (int k = 0; k < sh->n_kinds; k++)
        for (int64_t i = 0; i < sh->n_batches[k]; i++) {
            const Batch *b = sh->batches[k][i];
            if (!b->rows || line < b->line_no[0] || line > b->line_no[b->rows - 1]) continue;
            int64_t lo = 0, hi = b->rows - 1;
            while (lo <= hi) {
                int64_t mid = (lo + hi) / 2;
                if (b->line_no[mid] == line) return Py_BuildValue("(LL)", (long long)b->start[mid], (long long)(b->start[mid] + b->length[mid]));
                if (b->line_no[mid] < line) lo = mid + 1; else hi = mid - 1;
            }
        }
    Py_RETURN_NONE;
}

static PyObject *result_get_lines(ResultObject *self, void *c) { (void)c; return PyLong_FromLongLong(self->lines); }
static PyObject *result_get_rejected(ResultObject *self, void *c) { (void)c; Py_INCREF(self->rejected); return self->rejected; }
static PyObject *result_get_accepted(ResultObject *self, void *c) {
    (void)c;
    PyObject *t = PyTuple_New(self->shared->n_kinds);
    if (!t) return NULL;
    for (int k = 0; k < self->shared->n_kinds; k++) PyTuple_SET_ITEM(t, k, PyLong_FromLongLong(self->accepted[k]));
    return t;
}

static PyMethodDef result_methods[] = {
    {"rows", (PyCFunction)result_rows, METH_O, "rows(kind) -> the accepted rows of that kind (an Arrow stream source)."},
    {"span", (PyCFunction)result_span, METH_O, "span(line_no) -> (start, end) byte offsets of an accepted line, or None."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef result_getset[] = {
    {"lines", (getter)result_get_lines, NULL, "lines scanned (a last line without newline included)", NULL},
    {"accepted", (getter)result_get_accepted, NULL, "accepted rows per kind", NULL},
    {"rejected", (getter)result_get_rejected, NULL, "[(line_no, start, end)] of the lines left to the full validation", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ResultType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "loopscope.analyses._linescan.Scan",
    .tp_basicsize = sizeof(ResultObject),
    .tp_dealloc = (destructor)result_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "What one scan found.",
    .tp_methods = result_methods,
    .tp_getset = result_getset,
};

static char *dup_str(PyObject *s, size_t *len) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (!u) return NULL;
    char *c = malloc((size_t)n + 1);
    if (!c) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(c, u, (size_t)n + 1);
    if (len) *len = (size_t)n;
    return c;
}

static void config_free(Config *c) {
    for (int i = 0; i < c->n_fields; i++) free(c->names[i]);
    for (int k = 0; k < c->n_kinds; k++) free(c->kind_names[k]);
    memset(c, 0, sizeof(*c));
}

/* Scanner(fields, kinds, max_line): fields = ((name, class, required, lo, hi), ...)
 * without v and kind (lo and hi: an integer field's range); kinds =
 * ((kind_name, (field index, ...)), ...). */
static int scanner_init(ScannerObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"fields", "kinds", "max_line", NULL};
    PyObject *fields, *kinds;
    long long max_line;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOL", kwlist, &fields, &kinds, &max_line)) return -1;
    config_free(&self->cfg);
    Config *c = &self->cfg;
    memset(c->hash, -1, sizeof(c->hash));
    c->max_line = max_line;
    PyObject *fs = PySequence_Fast(fields, "fields must be a sequence");
    if (!fs) return -1;
    Py_ssize_t nf = PySequence_Fast_GET_SIZE(fs);
    if (nf > MAX_FIELDS) {
        Py_DECREF(fs);
        PyErr_SetString(PyExc_ValueError, "too many fields");
        return -1;
    }
    for (Py_ssize_t i = 0; i < nf; i++) {
        PyObject *name, *cls;
        int required;
        long long lo, hi;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fs, i), "UUpLL", &name, &cls, &required, &lo, &hi)) goto fail_fs;
        c->required[i] = (char)required;
        c->lo[i] = lo;
        c->hi[i] = hi;
        c->names[i] = dup_str(name, &c->name_len[i]);
        if (!c->names[i]) goto fail_fs;
        c->n_fields = (int)i + 1;
        const char *cl = PyUnicode_AsUTF8(cls);
        if (!cl || !cl[0] || !strchr("siInbot", cl[0]) || c->name_len[i] == 0) {
            PyErr_SetString(PyExc_ValueError, "bad field");
            goto fail_fs;
        }
        c->cls[i] = cl[0];
        for (size_t j = 0; j < c->name_len[i]; j++) {
            char ch = c->names[i][j];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) {
                PyErr_SetString(PyExc_ValueError, "field names must be plain: a-z, 0-9, _");
                goto fail_fs;
            }
        }
        signed char *slot = c->hash[key_hash(c->names[i], c->name_len[i])];
        int j = 0;
        while (j < 4 && slot[j] >= 0) j++;
        if (j == 4) {
            PyErr_SetString(PyExc_ValueError, "field hash table full");
            goto fail_fs;
        }
        slot[j] = (signed char)i;
    }
    Py_DECREF(fs);
    PyObject *ks = PySequence_Fast(kinds, "kinds must be a sequence");
    if (!ks) return -1;
    Py_ssize_t nk = PySequence_Fast_GET_SIZE(ks);
    if (nk > MAX_KINDS || nk == 0) {
        Py_DECREF(ks);
        PyErr_SetString(PyExc_ValueError, "bad number of kinds");
        return -1;
    }
    for (Py_ssize_t k = 0; k < nk; k++) {
        PyObject *name, *idx;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(ks, k), "UO", &name, &idx)) goto fail_ks;
        for (int f = 0; f < MAX_FIELDS; f++) c->kind_pos[k][f] = -1;
        c->kind_names[k] = dup_str(name, &c->kind_len[k]);
        if (!c->kind_names[k]) goto fail_ks;
        c->n_kinds = (int)k + 1;
        PyObject *is = PySequence_Fast(idx, "field indices must be a sequence");
        if (!is) goto fail_ks;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(is);
        for (Py_ssize_t j = 0; j < n && j < MAX_FIELDS; j++) {
            long f = PyLong_AsLong(PySequence_Fast_GET_ITEM(is, j));
            if (f < 0 || f >= c->n_fields) {
                Py_DECREF(is);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad field index");
                goto fail_ks;
            }
            c->kind_fields[k][j] = (int)f;
            c->kind_pos[k][f] = (int)j;
            c->kind_mask[k] |= (uint64_t)1 << f;
        }
        c->kind_n[k] = (int)(n < MAX_FIELDS ? n : MAX_FIELDS);
        Py_DECREF(is);
    }
    Py_DECREF(ks);
    return 0;
fail_fs:
    Py_DECREF(fs);
    return -1;
fail_ks:
    Py_DECREF(ks);
    return -1;
}

static void scanner_dealloc(ScannerObject *self) {
    config_free(&self->cfg);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static void segments_free(Segment *segs, int n) {
    for (int t = 0; t < n; t++) {
        for (int k = 0; k < MAX_KINDS; k++) {
            Batch *b = segs[t].head[k];
            while (b) {
                Batch *nx = b->next;
                batch_free(b);
                b = nx;
            }
        }
        free(segs[t].rejected.p);
    }
}

/* scan(buffer, first_line, threads) -> Scan */
static PyObject *scanner_scan(ScannerObject *self, PyObject *args) {
    Py_buffer view;
    long long first_line;
    int threads;
    if (!PyArg_ParseTuple(args, "y*Li", &view, &first_line, &threads)) return NULL;
    const Config *cfg = &self->cfg;
    if (cfg->n_kinds == 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "scanner not configured");
        return NULL;
    }
    if (threads < 1) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    const char *base = view.buf, *end = base + view.len;
    if (view.len < (Py_ssize_t)threads * 1024 * 1024) threads = 1;
    Segment segs[MAX_THREADS];
    memset(segs, 0, sizeof(segs));
    int n = 0;
    const char *p = base;
    for (int t = 0; t < threads && p < end; t++) {
        const char *e = end;
        if (t < threads - 1) {
            const char *cut = base + view.len / threads * (t + 1);
            if (cut < p) cut = p;
            const char *nl = cut < end ? memchr(cut, '\n', (size_t)(end - cut)) : NULL;
            e = nl ? nl + 1 : end;
        }
        segs[n].cfg = cfg;
        segs[n].base = base;
        segs[n].p = p;
        segs[n].e = e;
        n++;
        p = e;
    }
    pthread_t tids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    Py_BEGIN_ALLOW_THREADS
    for (int t = 1; t < n; t++) started[t] = pthread_create(&tids[t], NULL, scan_segment, &segs[t]) == 0;
    if (n > 0) scan_segment(&segs[0]);
    for (int t = 1; t < n; t++) {
        if (started[t]) pthread_join(tids[t], NULL);
        else scan_segment(&segs[t]); /* no thread: scan it here */
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);

    ResultObject *res = NULL;
    Shared *sh = NULL;
    int failed = 0;
    for (int t = 0; t < n; t++) failed |= segs[t].failed;
    if (failed) {
        segments_free(segs, n);
        return PyErr_NoMemory();
    }
    res = PyObject_New(ResultObject, &ResultType);
    if (!res) goto fail;
    res->shared = NULL;
    res->rejected = NULL;
    sh = calloc(1, sizeof(Shared));
    if (!sh) goto nomem;
    sh->refs = 1;
    sh->n_kinds = cfg->n_kinds;
    res->lines = 0;
    for (int k = 0; k < cfg->n_kinds; k++) {
        sh->kind_n[k] = cfg->kind_n[k];
        sh->col_names[k][0] = strdup("line_no");
        sh->col_formats[k][0] = "l";
        for (int i = 0; i < cfg->kind_n[k]; i++) {
            int f = cfg->kind_fields[k][i];
            sh->col_names[k][i + 1] = strdup(cfg->names[f]);
            switch (cfg->cls[f]) {
            case 'i': sh->col_formats[k][i + 1] = "i"; break;
            case 'I': sh->col_formats[k][i + 1] = "l"; break;
            case 'n': sh->col_formats[k][i + 1] = "g"; break;
            case 'b': sh->col_formats[k][i + 1] = "b"; break;
            case 't': sh->col_formats[k][i + 1] = "tsu:"; break;
            default: sh->col_formats[k][i + 1] = "u";
            }
        }
        sh->col_names[k][cfg->kind_n[k] + 1] = strdup("_line");
        sh->col_formats[k][cfg->kind_n[k] + 1] = "u";
        for (int i = 0; i < cfg->kind_n[k] + 2; i++)
            if (!sh->col_names[k][i]) goto nomem;
        int64_t total = 0;
        for (int t = 0; t < n; t++) total += segs[t].n_batches[k];
        sh->batches[k] = calloc((size_t)(total ? total : 1), sizeof(Batch *));
        if (!sh->batches[k]) goto nomem;
        res->accepted[k] = 0;
    }
    res->rejected = PyList_New(0);
    if (!res->rejected) goto fail;
    /* Number the lines over the segments; hand the batches over to Shared. */
    int64_t before = first_line - 1;
    for (int t = 0; t < n; t++) {
        for (int k = 0; k < cfg->n_kinds; k++) {
            for (Batch *b = segs[t].head[k]; b; b = b->next) {
                for (int64_t i = 0; i < b->rows; i++) b->line_no[i] += before;
                sh->batches[k][sh->n_batches[k]++] = b;
            }
            segs[t].head[k] = NULL;
            res->accepted[k] += segs[t].accepted[k];
        }
        for (int64_t i = 0; i < segs[t].rejected.len; i++) {
            Span *sp = &segs[t].rejected.p[i];
            PyObject *item = Py_BuildValue("(LLL)", (long long)(sp->line_no + before), (long long)sp->start, (long long)sp->end);
            if (!item || PyList_Append(res->rejected, item)) {
                Py_XDECREF(item);
                goto fail;
            }
            Py_DECREF(item);
        }
        before += segs[t].lines;
        res->lines += segs[t].lines;
    }
    segments_free(segs, n);
    res->shared = sh;
    return (PyObject *)res;
nomem:
    PyErr_NoMemory();
fail:
    /* Batches not yet handed over are freed with the segments; the rest with sh. */
    segments_free(segs, n);
    if (sh) {
        sh->refs = 1;
        shared_decref(sh);
    }
    if (res) {
        res->shared = NULL;
        Py_XDECREF(res->rejected);
        res->rejected = NULL;
        Py_TYPE(res)->tp_free((PyObject *)res);
    }
    return NULL;
}

static PyMethodDef scanner_methods[] = {
    {"scan", (PyCFunction)scanner_scan, METH_VARARGS,
     "scan(buffer, first_line, threads) -> Scan: split, number and check the lines of a bytes-like buffer."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "loopscope.analyses._linescan.Scanner",
    .tp_basicsize = sizeof(ScannerObject),
    .tp_dealloc = (destructor)scanner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(fields, kinds, max_line): recognises plain loopscope records in JSON Lines.",
    .tp_methods = scanner_methods,
    .tp_init = (initproc)scanner_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef linescan_module = {
    PyModuleDef_HEAD_INIT, "_linescan", "Native fast path of the loopscope records loader.", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__linescan(void) {
    if (PyType_Ready(&ScannerType) < 0 || PyType_Ready(&ResultType) < 0 || PyType_Ready(&StreamType) < 0) return NULL;
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!c_locale) return PyErr_NoMemory();
    PyObject *m = PyModule_Create(&linescan_module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
