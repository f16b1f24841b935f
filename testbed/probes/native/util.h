/* Small helpers the native probe shares: growable byte strings, a string-keyed hash map,
 * whole-file reads and line splitting. Strings are byte arrays with a length (file names,
 * command lines and probe output may hold any byte but '\n'); every one also ends in a NUL
 * past its length so that C string functions see it whole where it holds no NUL itself.
 * The process is short-lived: nothing is freed that lives until exit. */
#ifndef TBPROBE_UTIL_H
#define TBPROBE_UTIL_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    char *p;
    size_t n, cap;
} str;

void die(const char *what);
void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrndup(const char *s, size_t n);

void s_reserve(str *s, size_t more);
void s_add(str *s, const char *p, size_t n);
void s_adds(str *s, const char *z);
void s_addc(str *s, char c);
void s_clear(str *s);
int s_starts(const char *p, size_t n, const char *prefix);

/* A map from byte strings to a pointer or an int (open addressing, grows). */
typedef struct {
    char *key;
    size_t klen;
    void *val;
    long ival;
} entry;

typedef struct {
    entry *e;
    size_t cap, used;
} map;

entry *map_get(const map *m, const char *k, size_t n);
/* The entry for k, made (val NULL, ival 0) when missing; *made tells which. */
entry *map_put(map *m, const char *k, size_t n, int *made);

/* Read a whole file: NULL (errno set) when it cannot be opened or read. */
char *read_file(const char *path, size_t *len);

/* Call fn for each line of buf (without its '\n'; a last line without one counts, an empty
 * buffer has no lines) - the records awk's getline returns. */
typedef void (*line_fn)(const char *l, size_t n, void *ctx);
void each_line(const char *buf, size_t len, line_fn fn, void *ctx);

/* Fields of l split at every `sep` byte (empty fields kept), as awk's split(l, a, "X"). */
size_t split_char(const char *l, size_t n, char sep, const char **f, size_t *fl, size_t max);
/* Fields of l split at runs of blanks, tabs and newlines, leading/trailing ignored (awk's
 * split(l, a, " ")). */
size_t split_ws(const char *l, size_t n, const char **f, size_t *fl, size_t max);

int all_digits(const char *p, size_t n);  /* non-empty and only 0-9 */
void out(const char *p, size_t n);        /* fwrite to stdout */
void outs(const char *z);

#endif
