"""The fixed set of command lines whose outputs tests/test_cli_golden.py compares with tests/golden/.

The golden files were recorded from the code *before* the re-layout of issue 25 (commit 7fc7805, when
simlib still held the lectures, Figure 2 and the energy checks) by running this module there::

    git worktree add /tmp/pre 7fc7805
    cd /tmp/pre && PYTHONPATH=/tmp/pre python <this checkout>/tests/cli_golden.py --record <this checkout>/tests/golden

Each entry is (name, the command as it was spelled then, the spellings it has now). A command that moved
(``simlib figure2`` -> ``evidence figure2``) is compared under both its old spelling, which still works,
and the new one. What a golden file holds: the exit status, stdout and stderr, and the files the command
wrote (``{out}`` in a command is a fresh temporary folder).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

#: Small shapes: the simulator runs take a few seconds each. (name, the command then, its spellings now:
#: none = the same one)
COMMANDS: list[tuple[str, str, list[str]]] = [
    ("count_naive", "simlib count --algorithm naive --seq-len 1024 --head-dim 64", []),
    (
        "count_fa2_causal_json",
        "simlib count --algorithm fa2 --seq-len 4096 --head-dim 128 --gpu a100-40gb --causal --json",
        [],
    ),
    (
        "count_fa1_gqa_trace",
        "simlib count --algorithm fa1 --seq-len 512 --head-dim 64 --batch 2 --heads 4 --kv-heads 2 "
        "--sram 48KiB --trace",
        [],
    ),
    (
        "count_decode",
        "simlib count --algorithm decode --seq-len 8192 --query-len 1 --heads 32 --kv-heads 8 "
        "--head-dim 128 --gpu h200",
        [],
    ),
    (
        "count_naive_tc",
        "simlib count --algorithm naive_tc --seq-len 2048 --head-dim 64 --dtype bf16 --softmax-threads 32",
        [],
    ),
    ("count_unfused_bwd", "simlib count --algorithm unfused_bwd --seq-len 1024 --head-dim 64 --json", []),
    (
        "sweep_naive_fa2",
        "simlib sweep --algorithm naive,fa2 --seq-len 512:4096 --head-dim 64,128 --csv {out}/sweep.csv",
        [],
    ),
    (
        "sweep_table",
        "simlib sweep --algorithm fa1,fa2_fast --seq-len 1024,2048 --head-dim 64 --sram 100KB",
        [],
    ),
    (
        "count_fa2_tc",
        "simlib count --algorithm fa2_tc --seq-len 4096 --head-dim 128 --warps 4",
        # fa2_tc's defaults are version 4's since (32 query rows per warp, Bc = 48 at d = 128) and
        # version 5's (a K/V ring of 2 stages): the old kernel's tiles spelled out give the old counts
        [
            "simlib count --algorithm fa2_tc --seq-len 4096 --head-dim 128 --warps 4 --warp-rows 16 "
            "--block-cols 64 --no-q-reload --kv-stages 1"
        ],
    ),
    ("kvcache_llama", "simlib kvcache --model llama-2-7b --gpu h200 --batch 4", []),
    (
        "energy_fa2",
        "simlib energy --algorithm fa2 --seq-len 4096 --head-dim 64 --gpu h200",
        # the default is the cost model's prediction since (issue 21); the paper's count is --model logical
        ["simlib energy --algorithm fa2 --seq-len 4096 --head-dim 64 --gpu h200 --model logical"],
    ),
    ("figure2", "simlib figure2", ["evidence figure2"]),
    ("figure2_json", "simlib figure2 --json", ["evidence figure2 --json"]),
    ("claims", "simlib claims", ["evidence claims"]),
    (
        "model_vs_ncu",
        "gpu_kernels model-vs-ncu --out {out}/model_vs_ncu.csv",
        ["evidence model-vs-ncu --out {out}/model_vs_ncu.csv"],
    ),
    (
        "run_naive_sim",
        "gpu_kernels run --kernel naive --seq-len 32 --head-dim 8 --count --simulate --seed 3 "
        "--matmul-tile 4 --softmax-threads 4",
        [],
    ),
    (
        "run_tiled_sim",
        "gpu_kernels run --kernel tiled --seq-len 40 --head-dim 8 --count --simulate --seed 5 "
        "--block-rows 8 --block-cols 16 --causal",
        [],
    ),
    (
        "run_naive_tc_sim",
        "gpu_kernels run --kernel naive_tc --seq-len 32 --head-dim 64 --count --simulate --seed 7 "
        "--dtype fp16 --warps 1",
        [],
    ),
    (
        "run_fa2_tc_sim",
        "gpu_kernels run --kernel fa2_tc --seq-len 48 --head-dim 64 --count --simulate --seed 9 --warps 1 "
        "--causal",
        [],
    ),
    ("bad_seq_len", "simlib count --algorithm fa2 --seq-len 0 --head-dim 64", []),
    ("bad_gpu", "simlib energy --algorithm fa2 --seq-len 64 --head-dim 64 --gpu z80", []),
    ("bad_kernel_shape", "gpu_kernels run --kernel tiled --seq-len -3 --head-dim 8 --simulate", []),
]


#: Provenance fields that name the machine, the moment or the checkout, not what the command computed.
_VARYING = re.compile(
    r'^( *"(?:run_id|date_utc|git_commit|python|platform|numpy|numba|numba_cuda|cupy)": ).*?(,?)$', re.M
)
_ENTRY_POINT = re.compile(r'^( *)"[^"]*/__main__\.py"(,?)$', re.M)


def normalise(text: str, out: str, root: Path) -> str:
    """`text` with the temporary folder, the checkout's path and the varying provenance fields masked."""
    text = text.replace(out, "{out}").replace(str(root), "{root}")
    text = _VARYING.sub(r"\1<varies>\2", text)
    return _ENTRY_POINT.sub(r'\1"<entry point>"\2', text)


def run(command: str, root: Path) -> str:
    """`python -m <command>` in `root`, as a newcomer would type it: its exit status, stdout, stderr and
    the files it wrote, as one text (normalised: ``normalise``)."""
    with tempfile.TemporaryDirectory() as out:
        args = shlex.split(command.replace("{out}", out))
        env = {
            **os.environ,
            "PYTHONIOENCODING": "utf-8",
            "COLUMNS": "100",
            "NUMBA_ENABLE_CUDASIM": "1",
        }
        done = subprocess.run(
            [sys.executable, "-m", *args],
            cwd=root,
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            timeout=600,
        )
        parts = [f"exit status: {done.returncode}", "--- stdout", done.stdout, "--- stderr", done.stderr]
        for path in sorted(Path(out).rglob("*")):
            if path.is_file():
                parts += [f"--- file {path.relative_to(out)}", path.read_text(encoding="utf-8")]
        return normalise("\n".join(parts), out, root)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "--record":
        print(
            "usage: python tests/cli_golden.py --record FOLDER  (run in the checkout to record)",
            file=sys.stderr,
        )
        return 2
    folder = Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    for name, before, _ in COMMANDS:
        (folder / f"{name}.txt").write_text(run(before, Path.cwd()), encoding="utf-8")
        print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
