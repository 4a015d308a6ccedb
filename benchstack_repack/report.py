"""The verification figures of a repack, as printed lines and as repack-report.json."""

from __future__ import annotations

GIB = 1024 ** 3
REPORT_FILE = "repack-report.json"


def packed_line(entry: dict) -> str:
    """One packed tensor, in the form the emb4 article quotes, e.g.
    `...embed_tokens_per_layer.weight: 4.375 GiB bf16 -> 1.230 GiB int4 + f16 scales;
    0 off-grid groups; 74.26% of values bit-identical, worst error 6.58e-03 of the group
    max`."""
    name = entry["source"] if entry["module"] + ".weight" == entry["source"] else \
        f"{entry['module']} (from {entry['source']})"
    return (f"{name}: {entry['bytes_before'] / GIB:.3f} GiB {entry['dtype'].lower()} -> "
            f"{entry['bytes_after'] / GIB:.3f} GiB int4 + f16 scales; "
            f"{entry['off_grid_groups']:,} off-grid groups; "
            f"{100 * entry['bit_identical_share']:.2f}% of values bit-identical, "
            f"worst error {_error(entry['worst_error_of_group_max'])} of the group max")


def _error(relative: float | None) -> str:
    """None: some group's error is unbounded (an infinite value or a scale past float16)."""
    return "unbounded" if relative is None else f"{relative:.2e}"


def totals_line(entries: list[dict]) -> str:
    count = {a: sum(e["action"] == a for e in entries) for a in ("pack", "copy", "drop")}
    before = sum(e["bytes_before"] for e in entries if e["action"] != "drop")
    dropped = sum(e["bytes_before"] for e in entries if e["action"] == "drop")
    after = sum(e["bytes_after"] for e in entries)
    return (f"{count['pack']} packed, {count['copy']} kept as they are, {count['drop']} "
            f"dropped ({dropped / GIB:.3f} GiB); kept tensors {before / GIB:.3f} GiB -> "
            f"{after / GIB:.3f} GiB written")
