"""The one command of the fixture DAG's stages: ``python step.py <stage> <paper> <out>...``."""

import json
import sys
import time
from pathlib import Path

import yaml

stage, paper, *outs = sys.argv[1:]
params = yaml.safe_load(Path("params.yaml").read_text()).get(paper, {})
if params.get("fail"):
    sys.exit(f"{stage}: failing on purpose")
time.sleep(params.get("sleep", 0))
for out in outs:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name == "claim.json":
        path.write_text(json.dumps({"paper": paper, "title": f"Paper {paper}", "claim": "n is positive",
                                    "verdict": "reproduced", "profile": "smoke", "seeds": [0],
                                    "measured": {"n": str(params.get("n"))}}))
    elif path.name == "metrics.json":
        path.write_text(json.dumps({"n": params.get("n"), "score": {"mean": 1.0}}))
    else:
        path.write_text(f"{stage} n={params.get('n')}\n")
print(f"{stage} wrote {outs}")
