
/* ---- the rock-paper-scissors classifier -------------------------------------------------------- */

#define @MACRO@_LABEL_COUNT @label_count@
#define @MACRO@_LABELS {@labels_c@}
#define @MACRO@_IMAGE_SIDE @image_side@
#define @MACRO@_IMAGE_BYTES (@MACRO@_IMAGE_SIDE * @MACRO@_IMAGE_SIDE)

/* Classify a 28x28 grayscale picture (row-major, one byte a pixel; the program's input is
 * pixel / 255.0f). logits (may be NULL) receives the @label_count@ scores; returns the label index of the
 * highest (the first of equal ones) or a negative status. */
int @name@_classify(const uint8_t image[@MACRO@_IMAGE_BYTES], float logits[@MACRO@_LABEL_COUNT]);

/* "@first_label@", ... for a label index; NULL outside 0 .. @MACRO@_LABEL_COUNT - 1. */
const char *@name@_label(int index);
