"""A memory plan by lifetime, offered to ExecuTorch's memory planning beside its own greedy one.

ExecuTorch's greedy planner stacks "shared objects", each as large as the largest tensor it ever holds,
one after another: a tensor lives in one object for good, so the plan is the sum of the objects, often
well above the largest set of tensors live at one time (MobileNetV1 0.25 with integer I/O: 73,728 B of
plan for a largest live set of 55,296 B). `by_lifetime` places each tensor, largest first, at the lowest
offset where it meets no tensor placed before whose lifetime overlaps its own, so that bytes are shared
by any tensors that are never live together. A tensor ExecuTorch backs by another's storage (a view)
goes where its base went, at its offset in it.

`by_first_use` places them in the order they are first used instead. `planning_suite()` is ExecuTorch's
own algorithm suite with the three: it runs each and keeps the smallest plan (the earlier on a tie), and writes the offsets into the program, where every runtime reads them.
"""
from __future__ import annotations

from collections import defaultdict


def by_lifetime(alignment, specs, graph_module, graph_signature, extra_padding: int = 0):
    """An ExecuTorch memory planning algorithm (MemoryPlanningAlgorithmSuite's signature): a MemoryAlgoResult,
    the tensors placed largest first."""
    order = _graph_order(graph_module)
    return _plan(alignment, specs, graph_module, extra_padding,
                 lambda s: (-s.allocated_memory, s.lifetime[0], s.lifetime[1], order.get(id(s), 0)))


def by_first_use(alignment, specs, graph_module, graph_signature, extra_padding: int = 0):
    """The same placement, the tensors taken in the order they are first used (the largest first among those
    born together): on a chain of layers, often tighter than largest first."""
    order = _graph_order(graph_module)
    return _plan(alignment, specs, graph_module, extra_padding,
                 lambda s: (s.lifetime[0], -s.allocated_memory, s.lifetime[1], order.get(id(s), 0)))


def _plan(alignment, specs, graph_module, extra_padding: int, rank):
    from executorch.exir.memory_planning import MemoryAlgoResult, SpecAllocResult
    result = MemoryAlgoResult({}, [])
    placed = defaultdict(list)        # mem_id -> [(offset, end, first, last)]
    offsets = {}
    ranked = sorted(specs, key=rank)
    deferred = []
    base_of = _input_bytes(graph_module)
    for spec in ranked:
        mem_id = 1 if spec.mem_id is None else spec.mem_id
        spec.realign(alignment)
        if spec.storage_base is not None:
            deferred.append((spec, mem_id))
            continue
        offset = _lowest_free(placed[mem_id], spec, alignment, base_of.get(mem_id, 0))
        placed[mem_id].append((offset, offset + spec.allocated_memory, spec.lifetime[0], spec.lifetime[1]))
        offsets[spec] = offset
        result.spec_dict[spec] = SpecAllocResult(mem_id, len(offsets) - 1, offset)
    while deferred:                  # views: at their base's offset plus their own
        waiting = [(s, m) for s, m in deferred if s.storage_base not in offsets]
        if len(waiting) == len(deferred):
            raise RuntimeError("a tensor's storage base was never placed")
        for spec, mem_id in deferred:
            if spec.storage_base in offsets:
                base = result.spec_dict[spec.storage_base]
                offsets[spec] = offsets[spec.storage_base] + spec.storage_base_offset
                result.spec_dict[spec] = SpecAllocResult(base.mem_id, base.mem_obj_id, offsets[spec])
        deferred = waiting
    ids = [1, *placed] if placed else [1]
    sizes = [0] * (max(ids) + 1)
    for mem_id, blocks in placed.items():
        sizes[mem_id] = max([base_of.get(mem_id, 0), *(end for _, end, _, _ in blocks)]) + extra_padding
    result.bufsizes = sizes
    return result


def _lowest_free(blocks: list, spec, alignment: int, start: int) -> int:
    """The lowest aligned offset from `start` where `spec` meets no block live while it is."""
    first, last = spec.lifetime
    live = sorted((b for b in blocks if not (b[3] < first or last < b[2])), key=lambda b: b[0])
    offset = start
    for lo, hi, _, _ in live:
        if offset + spec.allocated_memory <= lo:
            break
        offset = max(offset, _align(hi, alignment))
    return offset


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def _input_bytes(graph_module) -> dict:
    """Bytes at the start of each buffer that ExecuTorch keeps for a submodule's inputs (usually none)."""
    sizes = getattr(graph_module, "input_mem_buffer_sizes", None) or []
    return {mem_id: size for mem_id, size in enumerate(sizes)}


def _graph_order(graph_module) -> dict:
    """id(spec) -> the place of its node in the graph: a tie-break that does not depend on set order, so
    that the same model gives the same program bytes."""
    order = {}
    for n, node in enumerate(graph_module.graph.nodes):
        spec = node.meta.get("spec")
        for s in spec if isinstance(spec, (list, tuple)) else [spec]:
            if s is not None:
                order.setdefault(id(s), n)
    return order


def planning_suite():
    """ExecuTorch's memory planning suite with its greedy algorithm, `by_lifetime` and `by_first_use`."""
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy
    return MemoryPlanningAlgorithmSuite(algo_list=[greedy, by_lifetime, by_first_use])
