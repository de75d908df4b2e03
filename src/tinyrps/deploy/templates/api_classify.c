
#include "runtime/tinyrps_image.h"

static const char *const LABELS[@MACRO@_LABEL_COUNT] = @MACRO@_LABELS;

int @name@_classify(const uint8_t image[@MACRO@_IMAGE_BYTES], float logits[@MACRO@_LABEL_COUNT]) {
    float scores[@MACRO@_LABEL_COUNT];
    size_t n_out = 0;
    if (!program || !image) return TRT_ERR_BAD_INPUT;
    trt_status s = trt_infer(program, image, scores, @MACRO@_LABEL_COUNT, &n_out);
    if (s != TRT_OK) return (int)s;
    int best = 0;
    for (int i = 1; i < @MACRO@_LABEL_COUNT; i++)
        if (scores[i] > scores[best]) best = i;
    if (logits) memcpy(logits, scores, sizeof scores);
    return best;
}

const char *@name@_label(int index) { return index >= 0 && index < @MACRO@_LABEL_COUNT ? LABELS[index] : NULL; }
