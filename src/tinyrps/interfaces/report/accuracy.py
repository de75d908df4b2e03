"""The accuracy section: each program's accuracy on the evaluated split, its agreement with eager and
whether its int8 outputs equal its reference's (`tinyrps eval`, the report's Accuracy)."""
from __future__ import annotations

from ...infra.stats import entry_accuracy
from .tables import percent, print_table


def _bit_exact(v: dict) -> str:
    if v.get("bit_exact") is None:
        return ""
    if v["bit_exact"]:
        return "yes"
    return f"NO ({v['mismatches']} images differ)" if v.get("mismatches") else "NO"


def eval_images(result: dict) -> int:
    """How many images an evaluation read (results written before --split: `test_images`)."""
    return result.get("images", result.get("test_images"))


def eval_split(result: dict) -> str:
    return result.get("split", "test")


def eval_rows(result: dict, screen: bool = True) -> list:
    """The evaluation's rows; on `screen` an accuracy's parts are lines of its cell (EVAL_HEADER),
    in Markdown one line (MARKDOWN_EVAL_HEADER)."""
    rows = []
    for name, v in result["programs"].items():
        rows.append([name, v["device"], entry_accuracy(v, eval_images(result), cell=screen),
                     percent(v.get("agreement")),
                     "" if "max_abs_logit_diff" not in v else f"{v['max_abs_logit_diff']:.4f}",
                     _bit_exact(v)])
    return rows


EVAL_HEADER = ["program", "device", "accuracy\ncorrect\n95 % CI", "agreement", "max |Δlogit|", "int8 bit-exact"]
MARKDOWN_EVAL_HEADER = ["program", "device", "accuracy (correct/images, 95 % CI)", *EVAL_HEADER[3:]]


def eval_notes(result: dict) -> str:
    """What the columns compare against, from the results themselves."""
    notes = ["accuracy: with the images read right of all, and its 95 % Wilson interval; "
             "agreement: same predicted label as eager (Ethos-U: as the int8 CPU model); "
             "max |Δlogit|: largest difference from eager's logits"]
    references = sorted({v["reference"] for v in result["programs"].values() if v.get("reference")})
    if references:
        notes.append(f"int8 bit-exact: the device's int8 outputs equal, on every {eval_split(result)} image, "
                     f"those of {' and '.join(references)} running the same program")
    shared = [f"{name} has {v['outputs_of']}'s outputs" for name, v in result["programs"].items() if v.get("outputs_of")]
    if shared:      # evaluate.shared_or_classified
        notes.append(f"{', '.join(shared)} (the same computation on its device, run once)")
    return "; ".join(notes)



def eval_table(result: dict) -> None:
    print_table(f"evaluation on {eval_images(result):,} {eval_split(result)} images ({eval_notes(result)})",
                EVAL_HEADER, eval_rows(result), legend=EVAL_LEGEND)


EVAL_LEGEND = {"program": "eager is the PyTorch checkpoint, the others its exported programs",
               "device": "what ran it"}

