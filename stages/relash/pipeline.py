"""relash in the DAG: contact hypergraphs → hyperlinks → fitted generators → fidelity → report (``make dag``)."""

STEPS = ("data", "train", "evaluate", "report")
PATHS = {
    "asset": "data/assets/hypergraphs",
    "hyperlinks": "data/relash/hyperlinks.parquet",
    "nodes": "data/relash/nodes.parquet",
    "models": "models/relash",
    "train_log": "data/relash/train_log.parquet",
    "evaluation": "data/relash/evaluation.json",
    "samples": "data/relash/samples.parquet",
}
