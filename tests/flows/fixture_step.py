"""The one command of the fixture DAG's stages: ``python step.py <stage> <paper> <out>...``.

Fails like the project's stage runner does: a refused params value prints
``[<stage>] refused params (params.yaml): <dotted.key>: ...`` and exits 2; ``fail: true`` raises.
"""

import json
import sys
import time
from pathlib import Path

import yaml

stage, paper, *outs = sys.argv[1:]
params = yaml.safe_load(Path("params.yaml").read_text()).get(paper, {})
if params.get("n", 1) < 1:
    sys.exit(f"[{stage}] refused params (params.yaml): {paper}.n: must be >= 1, got {params['n']}")
if params.get("fail"):
    raise RuntimeError(f"{stage} failing on purpose")
time.sleep(params.get("sleep", 0))
for out in outs:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name == "claim.json":
        checks = [{"name": "n is positive", "description": "n is positive: n >= 1", "status": "holds",
                   "values": [params.get("n"), params.get("n")]},
                  {"name": "n is large", "description": "n is large: n >= 100", "status": "fails",
                   "values": [params.get("n"), params.get("n")]},
                  {"name": "n is stable", "description": "n is stable: spread <= 0.1", "status": "unclear",
                   "values": [0.05, None]}]
        path.write_text(json.dumps({"paper": paper, "title": f"Paper {paper}", "claim": "n is positive",
                                    "verdict": "partly", "profile": "smoke", "seeds": [0, 1], "checks": checks,
                                    "measured": {"n": str(params.get("n"))}}))
    elif path.name == "metrics.json":
        path.write_text(json.dumps({"n": params.get("n"), "score": {"mean": 1.0}}))
    else:
        path.write_text(f"{stage} n={params.get('n')}\n")
print(f"{stage} wrote {outs}")
