#include "batch_input.h"

#include <stddef.h>

static int is_separator(char c) { return c == ' ' || c == '\t'; }

/* Scans from the end, so a line with any number of words gives its last two. */
int batch_file_names(char *line, char **samples, char **results)
{
    char *found[2] = {NULL, NULL};
    size_t end = 0;
    while (line[end])
        end++;
    for (int word = 1; word >= 0; word--) {
        while (end > 0 && is_separator(line[end - 1]))
            end--;
        if (end == 0)
            return -1;
        line[end] = '\0'; /* ends this word (the separator after it, or the line's own NUL) */
        while (end > 0 && !is_separator(line[end - 1]))
            end--;
        found[word] = line + end;
    }
    *samples = found[0];
    *results = found[1];
    return 0;
}

int batch_sample_count(long long bytes, uint32_t sample_bytes, uint32_t *count)
{
    if (bytes < 0 || sample_bytes == 0 || bytes % sample_bytes != 0 || bytes / sample_bytes > (long long)UINT32_MAX)
        return -1;
    *count = (uint32_t)(bytes / sample_bytes);
    return 0;
}
