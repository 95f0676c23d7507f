"""The verification page against itself at an earlier revision: the same honest certificate check, in node,
both pages measured in one run on this machine (so a slower machine slows both alike).

Each page checks the first vector of its own revision's conformance corpus (an honest German (4,2)
certificate with the customer's record, `tests/vectors/v1`), with its own revision's JSON Schemas:
every check the page runs, snarkjs's pairing included. The earlier revision is checked out in a
temporary git worktree.

    python benchmarks/page_against_revision.py --revision REV [--runs 30] [--rounds 3]

Writes benchmarks/results/page_against_revision.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TIMER = """
const fs = require('fs');
const [root, schemasPath, snarkjsPath, runs] = process.argv.slice(1);
const page = root + '/verifier_client/page/';
const verify = require(page + 'verify.js');
const canonical = require(page + 'canonical.js');
const snarkjs = require(snarkjsPath);
const vector = JSON.parse(fs.readFileSync(root + '/tests/vectors/v1/vectors.jsonl', 'utf8').split('\\n')[0]);
const inputs = { bundleText: vector.bundle, cardText: fs.readFileSync(root + '/tests/vectors/v1/' + vector.card, 'utf8'),
                 recordText: (vector.options || {}).record };
const env = { snarkjs, schemas: canonical.parseJson(fs.readFileSync(schemasPath, 'utf8')) };
(async () => {
  let verdict;
  for (let i = 0; i < 3; i++) verdict = await verify.verifyBundle(inputs, env);  // snarkjs builds its curve once
  const ms = [];
  for (let i = 0; i < Number(runs); i++) {
    const t = performance.now();
    await verify.verifyBundle(inputs, env);
    ms.push(performance.now() - t);
  }
  process.stdout.write(JSON.stringify({ valid: verdict.valid, ms }));
  process.exit(0);
})();
"""


def schemas_of(tree: Path, out: Path) -> Path:
    """The page's JSON Schemas as `tree`'s own models write them."""
    program = "import json, sys; from verifier_client.page import page_schemas; print(json.dumps(page_schemas()))"
    done = subprocess.run([sys.executable, "-c", program], cwd=tree, capture_output=True, text=True, check=True)
    out.write_text(done.stdout)
    return out


def time_page(tree: Path, schemas: Path, runs: int) -> list[float]:
    snarkjs = ROOT / "node_modules" / "snarkjs"
    done = subprocess.run(["node", "-e", TIMER, str(tree), str(schemas), str(snarkjs), str(runs)],
                          capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    if not result["valid"]:
        raise SystemExit(f"the page of {tree} refused its own honest vector")
    return result["ms"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revision", required=True, help="the earlier revision (a commit, tag or branch)")
    parser.add_argument("--runs", type=int, default=30, help="checks per page per round (default 30)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, the two pages alternating (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="page-revision-") as tmp:
        old = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(old), args.revision], cwd=ROOT, check=True)
        try:
            trees = {"earlier": old, "this": ROOT}
            schemas = {name: schemas_of(tree, Path(tmp) / f"{name}.json") for name, tree in trees.items()}
            samples: dict[str, list[float]] = {name: [] for name in trees}
            for round_ in range(args.rounds):
                for name, tree in trees.items():
                    samples[name] += time_page(tree, schemas[name], args.runs)
                print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, check=False)
    medians = {name: statistics.median(ms) for name, ms in samples.items()}
    print(f"\n{'page':<34}{'median ms':>10}{'min':>9}{'max':>9}{'checks':>8}{'x earlier':>11}")
    for name, ms in samples.items():
        label = f"{name} ({args.revision if name == 'earlier' else 'working tree'})"
        print(f"{label:<34}{medians[name]:>10.1f}{min(ms):>9.1f}{max(ms):>9.1f}{len(ms):>8}"
              f"{medians[name] / medians['earlier']:>11.2f}")
    out = ROOT / "benchmarks" / "results" / "page_against_revision.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"revision": args.revision, "runs": args.runs, "rounds": args.rounds,
                               "machine": platform.platform(), "samples_ms": samples, "median_ms": medians,
                               "ratio": medians["this"] / medians["earlier"]}, indent=2))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
