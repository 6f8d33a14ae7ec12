"""The shared assets in the DAG: each step module and where its paths live (read by ``make dag``)."""

STEPS = (
    "wikipedia",
    "enwiki",
    "smollm2",
    "gemma3",
    "minilm",
    "efficientnet",
    "retrieval",
    "fashion_mnist",
    "digits",
    "time_series",
    "hypergraphs",
    "tla_tools",
    "manifest_report",
)
# one table per asset stage (assets-<name>): field -> path
STEP_PATHS = {
    "wikipedia": {
        "corpus": "data/assets/wikipedia",
        "manifest": "reports/assets/manifests/wikipedia.json",
    },
    "enwiki": {
        "corpus": "data/assets/enwiki",
        "manifest": "reports/assets/manifests/enwiki.json",
    },
    "smollm2-135m": {
        "corpus": "data/assets/wikipedia",
        "model": "models/assets/smollm2-135m",
        "manifest": "reports/assets/manifests/smollm2-135m.json",
    },
    "gemma3-270m": {
        "model": "models/assets/gemma3-270m",
        "manifest": "reports/assets/manifests/gemma3-270m.json",
    },
    "minilm-l6-v2": {
        "model": "models/assets/minilm-l6-v2",
        "manifest": "reports/assets/manifests/minilm-l6-v2.json",
    },
    "efficientnet-lite0": {
        "model": "models/assets/efficientnet-lite0",
        "manifest": "reports/assets/manifests/efficientnet-lite0.json",
    },
    "wikipedia-index": {
        "corpus": "data/assets/wikipedia",
        "encoder": "models/assets/minilm-l6-v2",
        "index": "data/assets/wikipedia-index",
        "manifest": "reports/assets/manifests/wikipedia-index.json",
    },
    "fashion-mnist": {
        "images": "data/assets/fashion-mnist",
        "manifest": "reports/assets/manifests/fashion-mnist.json",
    },
    "digits": {
        "images": "data/assets/digits",
        "manifest": "reports/assets/manifests/digits.json",
    },
    "japanese-vowels": {
        "series": "data/assets/japanese-vowels",
        "manifest": "reports/assets/manifests/japanese-vowels.json",
    },
    "hypergraphs": {
        "hypergraphs": "data/assets/hypergraphs",
        "manifest": "reports/assets/manifests/hypergraphs.json",
    },
    "tla2tools": {
        "tools": "models/assets/tla2tools",
        "manifest": "reports/assets/manifests/tla2tools.json",
    },
    "manifest": {
        "manifests": "reports/assets/manifests",
        "timings": "reports/assets/timings",
        "report": "reports/assets/manifest.md",
    },
}
