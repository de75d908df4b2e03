"""The search space (settings.SPACE): Optuna's categorical parameters, and the architecture spec
(tinyrps.network.model, `--arch`) each point of the space stands for.
"""
from __future__ import annotations

from typing import Optional

from ..network.arch import Layer, feature_shape, parse_arch, pooled
from .settings import SPACE


def arch_of(params: dict) -> str:
    """Optuna parameters -> an architecture spec that `--arch` accepts."""
    layers = [f"c{params['conv1']}"] + (["p"] if params["reduce1"] == "pool" else [])
    for conv, reduce in (("conv2", "reduce2"), ("conv3", "reduce3")):
        how = params[reduce]
        layers.append(f"c{params[conv]}" + ("s2" if how == "stride" else ""))
        if how != "stride":
            layers.append({"pool": "p", "pool3": "p3"}[how])
    if params["head"] == "one-pixel":       # pooled down to one pixel: the largest of each channel anywhere
        size = feature_shape(parse_arch("-".join(layers)))[1]
        while size > 1:
            pool = Layer("pool", kernel=3 if size == 3 else 2)     # a 3x3 map in one step
            layers.append("p3" if pool.kernel == 3 else "p")
            size = pooled(size, pool)
    if params["fc"]:
        layers.append(f"f{params['fc']}")
    return "-".join(layers)


def suggest(trial) -> str:
    return arch_of({name: trial.suggest_categorical(name, list(choices)) for name, choices in SPACE.items()})


def params_of(spec: str) -> Optional[dict]:
    """The point of SPACE whose architecture is `spec` (the first, in the space's order), or None."""
    import itertools
    for values in itertools.product(*SPACE.values()):
        params = dict(zip(SPACE, values))
        if arch_of(params) == spec:
            return params
    return None
