"""The audits' PNG charts (matplotlib, imported when a chart is drawn)."""
from __future__ import annotations

from pathlib import Path


def plot_spread(distribution: dict[int, int], model_id: str, width: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ks = list(distribution)
    ax.bar([str(k) for k in ks], [distribution[k] for k in ks], color="#4C72B0")
    ax.set_xlabel("k: distinct margin buckets over the sensitive combinations")
    ax.set_ylabel("individuals")
    ax.set_title(f"{model_id}: counterfactual spread (width {width:.3g} logits)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_persistence(scores, model_id: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys((g.attribute, g.group, g.setting) for g in scores))
    deltas = list(dict.fromkeys(g.delta for g in scores))
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(groups)), 3.4))
    width = 0.8 / max(len(deltas), 1)
    for i, d in enumerate(deltas):
        shares = [next((g.share(g.favoured) for g in scores if (g.attribute, g.group, g.setting) == key
                        and g.delta == d), 0.0) for key in groups]
        ax.bar([x + i * width for x in range(len(groups))], shares, width, label=f"delta {float(d):g}")
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))])
    ax.set_xticklabels([f"{g[1][:12]}\n{g[2]}" for g in groups], fontsize=7)
    ax.set_ylabel("persistently favoured")
    ax.set_ylim(0, 1)
    ax.set_title(f"{model_id}: persistent bias by group", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_groups(report, model_id: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    present = [g for g in report.groups if g.n]
    fig, ax = plt.subplots(figsize=(max(4, 1.1 * len(present)), 3.2))
    rates = [g.selection_rate for g in present]
    errors = [[r - g.selection_interval[0] for r, g in zip(rates, present)],
              [g.selection_interval[1] - r for r, g in zip(rates, present)]]
    ax.bar(range(len(present)), rates, yerr=errors, capsize=3)
    ax.set_xticks(range(len(present)))
    ax.set_xticklabels(["\n".join(g.labels)[:40] for g in present], fontsize=7)
    ax.set_ylabel("selection rate (95% CI)")
    ax.set_ylim(0, 1)
    ax.set_title(f"{model_id}: decided favourably, by group", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_eps(values: list[float], capped: int, flips: int, model_id: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.hist(values, bins=20, color="#4C72B0")
    ax.set_xlabel("certified radius eps (standardised units)")
    ax.set_ylabel("customers")
    ax.set_title(f"{model_id}: radii ({capped} at the cap, {flips} counterfactual flips)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def png_of(draw) -> bytes:
    """The PNG a plotting function writes to a path, as bytes."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chart.png"
        draw(path)
        return path.read_bytes()
