"""`python -m benchstack_repack SRC DST --build B`, or `SRC --check-tied-head`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchstack_repack import builds, repack, tied_head
from benchstack_repack.sources import SourceError, open_source, read_tensors

GIB = 1024 ** 3


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="./dev repack",
        description="Repack a QAT q4_0 checkpoint (e.g. google/...-qat-q4_0-unquantized) "
                    "into compressed-tensors W4A16 (pack-quantized) that vLLM loads.")
    p.add_argument("source", help="a local checkpoint folder or a Hub repo id (owner/name)")
    p.add_argument("destination", nargs="?", type=Path,
                   help="a new or empty folder for the build")
    p.add_argument("--build", choices=builds.BUILDS,
                   help="text-only: Linears int4; ple4: also the per-layer embedding table; "
                        "emb4: also embed_tokens and an untied int4 lm_head")
    p.add_argument("--check-tied-head", action="store_true",
                   help="only report whether lm_head.weight duplicates embed_tokens")
    p.add_argument("--revision", default="main", help="Hub revision (default main)")
    p.add_argument("--max-shard-gib", type=float, default=repack.DEFAULT_MAX_SHARD_BYTES / GIB)
    p.add_argument("--max-off-grid-share", type=float,
                   default=repack.DEFAULT_MAX_OFF_GRID_SHARE,
                   help="refuse the build when a tensor has more off-grid groups than this "
                        "share of its groups (default %(default)s)")
    p.add_argument("--keep-16bit", action="append", default=[], metavar="REGEX",
                   help="leave tensors whose name matches at 16-bit (on the ignore list)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        source = open_source(args.source, args.revision)
        if args.check_tied_head:
            located = {info.name: (f, start, info) for f, start, info in read_tensors(source)}
            result = tied_head.check(source, located, source.json("config.json") or {})
            print(result.line())
            print(json.dumps(result.as_dict()))
            return 0
        if args.destination is None or args.build is None:
            parser().error("give DST and --build (or --check-tied-head)")
        repack.repack(source, args.destination, args.build,
                      max_shard_bytes=int(args.max_shard_gib * GIB),
                      max_off_grid_share=args.max_off_grid_share, keep_16bit=args.keep_16bit)
    except (SourceError, repack.RepackRefused) as exc:
        print(f"repack: {exc}", file=sys.stderr)
        return 1
    print(f"repack: wrote {args.destination}")
    return 0
