/* rx.c - ECMAScript pattern source to POSIX ERE; see rx.h for what is translated. */
#include "rx.h"

#include "err.h"

#include <string.h>

static void bits_set(unsigned char *bits, int lo, int hi)
{
    for (int b = lo; b <= hi; b++)
        bits[b >> 3] |= (unsigned char)(1u << (b & 7));
}

static int bits_has(const unsigned char *bits, int b)
{
    return (bits[b >> 3] >> (b & 7)) & 1;
}

/* Adds the class of escape letter e (d, w, s or the negations) to bits; 0 if not a class. */
static int class_add(unsigned char *bits, char e)
{
    unsigned char tmp[32] = {0};
    switch (e | 0x20) {
    case 'd':
        bits_set(tmp, '0', '9');
        break;
    case 'w':
        bits_set(tmp, '0', '9');
        bits_set(tmp, 'A', 'Z');
        bits_set(tmp, 'a', 'z');
        bits_set(tmp, '_', '_');
        break;
    case 's':
        bits_set(tmp, '\t', '\r');
        bits_set(tmp, ' ', ' ');
        break;
    default:
        return 0;
    }
    for (int i = 0; i < 32; i++)
        bits[i] |= (e >= 'a') ? tmp[i] : (unsigned char)~tmp[i];
    bits[0] &= (unsigned char)~1u; /* never NUL */
    return 1;
}

/* The byte an escape \e stands for inside or outside a class, or -1 when unsupported.
 * *src points after e and is advanced past \xHH and ASCII \uXXXX. */
static int escape_byte(char e, const char **src)
{
    static const char punct[] = "^$\\.*+?()[]{}|/-,:;=!<>'\"#%&~@` ";
    unsigned v = 0;
    int digits = e == 'x' ? 2 : e == 'u' ? 4 : 0;
    switch (e) {
    case 'n':
        return '\n';
    case 't':
        return '\t';
    case 'r':
        return '\r';
    case 'f':
        return '\f';
    case 'v':
        return '\v';
    }
    if (digits) {
        for (int i = 0; i < digits; i++) {
            char h = (*src)[i];
            int d = (h >= '0' && h <= '9')                     ? h - '0'
                    : ((h | 0x20) >= 'a' && (h | 0x20) <= 'f') ? (h | 0x20) - 'a' + 10
                                                               : -1;
            if (d < 0)
                return -1;
            v = v * 16 + (unsigned)d;
        }
        *src += digits;
        return (v > 0 && v < 0x80) ? (int)v : -1;
    }
    return (e && strchr(punct, e)) ? (unsigned char)e : -1;
}

/*
 * The size glibc's regcomp gives the translation, estimated as the pattern is read, in nodes
 * (atoms and repetition operators). regcomp copies the operand of a repetition once per
 * repeat (x{2,5} is built as x x x? x? x?, x+ as x x*), so nested repetitions multiply, its
 * epsilon closures grow with the square of the copies, and a repetition of something that
 * repeats already costs it far more than its size: "\\++++...+" (each '+' doubling) took
 * gigabytes, "[a-z]{0,10000}" 0.8 GB and a second, "&**...*{1000}" minutes, for every
 * validation that compiles the pattern (tests/fuzz/corpus/config/regress-regcomp-*).
 *
 * So, as in ECMAScript, a quantifier cannot follow a quantifier (only the lazy '?'); a
 * repeated operand that contains a repetition counts RX_NESTED_REP_WEIGHT times; and
 * patterns estimated above RX_MAX_NODES nodes, or nesting groups more than RX_MAX_NEST deep,
 * are refused (MCPQ_EINVAL). "[a-z]{0,2000}" still fits (about 35 MB, 15 ms to compile).
 */
#define RX_MAX_NODES 2048
#define RX_NESTED_REP_WEIGHT 4
#define RX_MAX_NEST 64

typedef struct rx_cost {
    size_t total[RX_MAX_NEST + 1]; /* per open group: nodes so far */
    size_t last[RX_MAX_NEST + 1];  /* nodes of the last atom or group (what a quantifier repeats) */
    unsigned char last_rep[RX_MAX_NEST + 1]; /* ... and whether it contains a repetition */
    unsigned char any_rep[RX_MAX_NEST + 1];  /* whether the group so far contains one */
    int depth;
} rx_cost_t;

/* a * b, saturating just above the budget. */
static size_t cost_mul(size_t a, size_t b)
{
    return b && a > (RX_MAX_NODES + 1) / b ? RX_MAX_NODES + 1 : a * b;
}

/* An atom, or a closed group, of n nodes (rep: it contains a repetition). 0, or MCPQ_EINVAL
 * over budget. */
static int cost_atom(rx_cost_t *k, size_t n, int rep)
{
    k->total[k->depth] += n;
    k->last[k->depth] = n;
    k->last_rep[k->depth] = (unsigned char)rep;
    k->any_rep[k->depth] |= (unsigned char)rep;
    return k->total[k->depth] > RX_MAX_NODES ? MCPQ_EINVAL : 0;
}

/* The last atom repeated: factor copies of it, plus the repetition node. */
static int cost_repeat(rx_cost_t *k, size_t factor)
{
    int d = k->depth;
    size_t last = k->last[d];
    size_t now = cost_mul(cost_mul(last, factor), k->last_rep[d] ? RX_NESTED_REP_WEIGHT : 1) + 1;
    k->total[d] += now - last;
    k->last[d] = now;
    k->last_rep[d] = k->any_rep[d] = 1;
    return k->total[d] > RX_MAX_NODES ? MCPQ_EINVAL : 0;
}

static int cost_open(rx_cost_t *k)
{
    if (k->depth >= RX_MAX_NEST)
        return MCPQ_EINVAL;
    k->depth++;
    k->total[k->depth] = k->last[k->depth] = 0;
    k->last_rep[k->depth] = k->any_rep[k->depth] = 0;
    return 0;
}

static int cost_close(rx_cost_t *k)
{
    if (k->depth == 0)
        return cost_atom(k, 1, 0); /* an unmatched ')': regcomp decides */
    size_t inner = k->total[k->depth];
    int rep = k->any_rep[k->depth--];
    return cost_atom(k, inner + 1, rep);
}

/* Nothing before a quantifier right after '|' (it repeats an empty operand). */
static void cost_alt(rx_cost_t *k)
{
    k->last[k->depth] = 0;
    k->last_rep[k->depth] = 0;
}

/* Length of an ERE bound "{n}", "{n,}", "{n,m}" or "{,m}" at s (0 when s does not start
 * one), with the copies regcomp makes of its operand in *factor. */
static size_t bound_len(const char *s, size_t *factor)
{
    size_t i = 1, lo = 0, hi = 0, nlo = 0, nhi = 0;
    int comma = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++, nlo++)
        lo = lo > RX_MAX_NODES ? lo : lo * 10 + (size_t)(s[i] - '0');
    if (s[i] == ',') {
        comma = 1;
        for (i++; s[i] >= '0' && s[i] <= '9'; i++, nhi++)
            hi = hi > RX_MAX_NODES ? hi : hi * 10 + (size_t)(s[i] - '0');
    }
    if ((nlo == 0 && !comma) || s[i] != '}')
        return 0; /* glibc reads "{,m}" as "{0,m}" */
    *factor = !comma ? lo : nhi == 0 ? lo + 1 : (hi > lo ? hi : lo) + 1;
    if (*factor == 0)
        *factor = 1;
    return i + 1;
}

/* Appends n bytes of s to out unless an earlier append failed: the first error sticks. */
static int put(util_buf_t *out, int rc, const char *s, size_t n)
{
    return rc < 0 ? rc : util_buf_append(out, s, n);
}

/* Emits bits as a POSIX bracket expression: ']' first, '-' last, '^' never first.
 * MCPQ_EINVAL for an empty class that is not negated (it could never match). */
static int emit_bracket(util_buf_t *out, const unsigned char *bits, int negate)
{
    int n = 0, rc;
    for (int b = 1; b < 256; b++)
        n += bits_has(bits, b);
    if (n == 0)
        return negate ? util_buf_append(out, ".", 1) : MCPQ_EINVAL;
    if (n == 1 && bits_has(bits, '^') && !negate)
        return util_buf_append(out, "\\^", 2);
    rc = util_buf_append(out, negate ? "[^" : "[", negate ? 2 : 1);
    size_t start = out->len;
    if (bits_has(bits, ']'))
        rc = put(out, rc, "]", 1);
    for (int b = 1; b < 256; b++) {
        if (!bits_has(bits, b) || b == ']' || b == '-' || b == '^')
            continue;
        int e = b;
        while (e + 1 < 256 && bits_has(bits, e + 1) && e + 1 != ']' && e + 1 != '-' && e + 1 != '^')
            e++;
        char run[3] = {(char)b, '-', (char)e};
        if (e - b >= 2) {
            rc = put(out, rc, run, 3);
        } else {
            rc = put(out, rc, run, 1);
            if (e > b)
                rc = put(out, rc, run + 2, 1);
        }
        b = e;
    }
    /* '^' right after '[' would negate: with nothing before it, '-' goes first ("[-^]"). */
    int caret_first = bits_has(bits, '^') && !negate && out->len == start;
    if (caret_first)
        rc = put(out, rc, "-^", 2);
    else if (bits_has(bits, '^'))
        rc = put(out, rc, "^", 1);
    if (bits_has(bits, '-') && !caret_first)
        rc = put(out, rc, "-", 1);
    return put(out, rc, "]", 1);
}

/* Translates a class "[...]" starting after '[' and advances *src past it; 0 or an
 * rx_translate error. */
static int translate_class(const char **src, util_buf_t *out)
{
    unsigned char bits[32] = {0};
    const char *p = *src;
    int negate = 0, prev = -1;
    if (*p == '^') {
        negate = 1;
        p++;
    }
    while (*p && *p != ']') {
        int ch, escaped = *p == '\\';
        if ((unsigned char)*p >= 0x80)
            return MCPQ_EINVAL;
        if (escaped) {
            char e = p[1];
            if (!e)
                return MCPQ_EINVAL;
            p += 2;
            if (e && class_add(bits, e)) {
                prev = -1;
                continue;
            }
            ch = e == 'b' ? '\b' : escape_byte(e, &p);
            if (ch < 0)
                return MCPQ_EINVAL;
        } else {
            ch = (unsigned char)*p++;
        }
        if (ch == '-' && !escaped && prev >= 0 && *p && *p != ']') {
            const char *q = p;
            int hi = (unsigned char)*q++;
            if (hi == '\\') {
                char e = *q++;
                hi = escape_byte(e, &q);
            }
            if (hi < prev || hi >= 0x80)
                return MCPQ_EINVAL;
            bits_set(bits, prev, hi);
            p = q;
            prev = -1;
            continue;
        }
        bits_set(bits, ch, ch);
        prev = ch;
    }
    if (*p != ']')
        return MCPQ_EINVAL;
    *src = p + 1;
    return emit_bracket(out, bits, negate);
}

/* The backslash escape at *src into out, *src moved past it: a class escape (\d, \w, \s and
 * their negations) as a bracket, \b and \B as they are, any other as the byte it stands for
 * (escaped when special to POSIX). 0, MCPQ_EINVAL for a bad escape, or util_buf_append's. */
static int translate_escape(const char **src, util_buf_t *out)
{
    static const char special[] = "^$\\.*+?()[]{}|";
    char e = (*src)[1];
    unsigned char bits[32] = {0};
    if (!e)
        return MCPQ_EINVAL;
    *src += 2;
    if (class_add(bits, e))
        return emit_bracket(out, bits, 0);
    if (e == 'b' || e == 'B') {
        char two[2] = {'\\', e};
        return util_buf_append(out, two, 2);
    }
    int b = escape_byte(e, src);
    char two[2] = {'\\', (char)b};
    if (b < 0)
        return MCPQ_EINVAL;
    return strchr(special, b) ? util_buf_append(out, two, 2) : util_buf_append(out, two + 1, 1);
}

int rx_translate(const char *ecma, util_buf_t *out)
{
    const char *src = ecma;
    int after_quant = 0, after_rep = 0;
    rx_cost_t cost;
    memset(&cost, 0, sizeof(cost));
    while (*src) {
        int rc = 0, quant = 0, rep = 0;
        char ch = *src;
        size_t factor = 1, n = 0;
        if (ch == '{')
            n = bound_len(src, &factor);
        if (ch == '?' && after_quant) {
            rep = after_rep; /* lazy: still right after the quantifier */
        } else if (ch == '*' || ch == '+' || ch == '?' || n > 0) {
            if (after_rep)
                return MCPQ_EINVAL; /* "a**", "a+*", "a{2}{3}": nothing to repeat */
            rc = cost_repeat(&cost, ch == '+' ? 2 : factor);
            rep = 1;
        } else if (ch != '(' && ch != ')' && ch != '|') {
            rc = cost_atom(&cost, 1, 0); /* groups and alternatives: accounted for below */
        }
        if (rc == 0 && n > 0) {
            rc = util_buf_append(out, src, n);
            src += n;
            after_quant = after_rep = 1;
            if (rc < 0)
                return rc;
            continue;
        }
        if (rc < 0)
            return rc;
        if (ch == '\\') {
            rc = translate_escape(&src, out);
        } else if (ch == '[') {
            src++;
            rc = translate_class(&src, out);
        } else if (ch == '(' && src[1] == '?') {
            if (src[2] != ':')
                return MCPQ_EINVAL; /* lookaround, named groups */
            src += 3;
            rc = cost_open(&cost);
            if (rc == 0)
                rc = util_buf_append(out, "(", 1);
        } else if (ch == '?' && after_quant) {
            src++; /* lazy quantifier: the same matches for a search */
        } else {
            quant = ch == '*' || ch == '+' || ch == '?' || ch == '}';
            if (ch == '(')
                rc = cost_open(&cost);
            else if (ch == ')')
                rc = cost_close(&cost);
            else if (ch == '|')
                cost_alt(&cost);
            if (rc == 0)
                rc = util_buf_append(out, src++, 1);
        }
        if (rc < 0)
            return rc;
        after_quant = quant;
        after_rep = rep;
    }
    return 0;
}
