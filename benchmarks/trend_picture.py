"""docs/img/trend.png: the curves of a real `stratbench trend` run, as its report draws them.

The five checkpoints ckpt-100 … ckpt-1000000 are the fake OpenAI-compatible server with a skill
planted in every suite (tests/helpers/planted_skill.py: weight 0, 0.9, 0.9, 0.2, 0 on a skilled
answer, the rest chance — a rise, a plateau and a fall). The server runs in a process of its own;
the trend is the command line, at the quick budget by default (`--budget smoke` shows the same
emergence and regressions, with wider bands), with no response cache:

    stratbench trend --model openai-compatible:ckpt-100 … --model openai-compatible:ckpt-1000000 \\
        --step-from 'ckpt-(\\d+)' --budget quick --seed 0 --base-url URL --no-cache

and the picture is the report's own (`trend_<time>/report/trend.png`, drawn by
`stratbench.report.plots.trend_plot`), copied. The command's table is printed.

Run: .venv/bin/python benchmarks/trend_picture.py [--out docs/img/trend.png] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from planted_skill import WEIGHTS, planted_server  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "trend.png"))
    ap.add_argument("--keep", help="copy the trend folder here too")
    ap.add_argument("--budget", default="quick", help="the trend's budget (default quick)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="trend_picture_") as tmp, planted_server() as url:
        cmd = [sys.executable, "-m", "stratbench", "trend"]
        for name in WEIGHTS:
            cmd += ["--model", f"openai-compatible:{name}"]
        cmd += ["--step-from", r"ckpt-(\d+)", "--budget", args.budget, "--seed", "0", "--base-url", url,
                "--no-cache", "--output-dir", tmp]
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, COLUMNS="140"))
        print(p.stdout)
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            raise SystemExit(f"stratbench trend exited {p.returncode}")
        (folder,) = Path(tmp).glob("trend_*")
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / "report" / "trend.png", out)
        if args.keep:
            shutil.copytree(folder, Path(args.keep) / folder.name)
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
