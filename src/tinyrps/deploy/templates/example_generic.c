
/* The inputs (zeros) and outputs, in the program's own types. */
@input_arrays@
@output_arrays@

int main(void) {
    char line[200], *out = line;
    const void *inputs[@MACRO@_INPUT_COUNT] = {@input_list@};
    void *outputs[@MACRO@_OUTPUT_COUNT] = {@output_list@};
    int status = @name@_init(arena, sizeof arena);
    if (status == @MACRO@_OK) status = @name@_run_all(inputs, outputs);
    if (status != @MACRO@_OK) {
        out = put_text(put_text(out, "@name@: "), @name@_status_name(status));
        *out = '\0';
        example_print(line);
        return 1;
    }
    const @ctype@ *first = output0;
    out = put_text(out, "output 0 on zeros:");
    for (int i = 0; i < @count@; i++) {
        *out++ = ' ';
        out = @put@;
    }
    *out = '\0';
    example_print(line);
    return 0;
}
