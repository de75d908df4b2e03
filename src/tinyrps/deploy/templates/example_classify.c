
/* A picture of "@example_label@", 28x28, one byte a pixel (tinyrps.data.render, seed @example_seed@). */
static const uint8_t picture[@MACRO@_IMAGE_BYTES] = {
@picture@
};

int main(void) {
    char line[160], *out = line;
    float logits[@MACRO@_LABEL_COUNT];
    int status = @name@_init(arena, sizeof arena);
    if (status != @MACRO@_OK) {
        out = put_text(put_text(out, "@name@_init: "), @name@_status_name(status));
        *out = '\0';
        example_print(line);
        return 1;
    }
    int label = @name@_classify(picture, logits);
    if (label < 0) {
        out = put_text(put_text(out, "@name@_classify: "), @name@_status_name(label));
        *out = '\0';
        example_print(line);
        return 1;
    }
    out = put_text(put_text(out, "the picture shows "), @name@_label(label));
    out = put_text(out, " (scores");
    for (int i = 0; i < @MACRO@_LABEL_COUNT; i++) {
        out = put_text(put_text(out, " "), @name@_label(i));
        out = put_score(put_text(out, " "), logits[i]);
    }
    *out++ = ')';
    *out = '\0';
    example_print(line);
    return 0;
}
