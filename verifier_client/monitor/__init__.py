"""An auditor following the bank's transparency log, run after run.

The log belongs to the service. A bank holds its service and its log key, so
it could serve, from the same URL, a fresh log under a fresh origin and key
(a private log holding one customer's certificate) and hope to be taken as a
new log seen for the first time. So the monitor pins, per service URL (its
`verifier_client.pins.pin_origin` spelling: localhost and 127.0.0.1 are one
service), the log's origin and key: the default state directory is named
after the service, not after the origin the service names, and the state
records the origin and key. A service presenting another origin or key than
its state pins, in /v1/log/key or in its checkpoint, is a VIOLATION, never a
first use.

Each run takes the log's newest checkpoint, checks it against the one kept
from the run before, downloads only the entries added since, and proves that
they are exactly the signed tree:

1. The log's origin and key as the service names them (/v1/log/key) must be
   the pinned ones (pinned on first use from /v1/log/key, or named with
   `log_key`), and the checkpoint must be signed by that key for that origin.
2. Against the kept checkpoint: a smaller tree is a ROLLBACK, the same size
   with another root is a FORK, a larger tree needs an RFC 9162 consistency
   proof from the kept size (a proof that fails is a FORK).
3. Entries [kept size, new size) are fetched page by page, each parsed as a
   canonical FairProof leaf, and their leaf hashes appended to the compact
   range kept from the last run; the resulting root must be the checkpoint's.
   An old `certificate_issued` leaf (it holds a customer's query) is served
   redacted, as its leaf hash alone: it takes its place in the tree, is
   counted as redacted, and adds nothing to the statistics. A redacted entry
   of any other kind is a violation: nothing else may be withheld; so is a
   redacted entry after the log's first `certificate_committed` leaf (the
   service stopped writing old leaves then, so nothing later is old). What a
   redacted entry is cannot be checked otherwise: its kind is the log's word.
4. Every leaf is audited: a published card is fetched, must hash to its
   digest, parse strictly, name the leaf's model and commitment, and be
   included in a checkpoint consistent with this one; a decision request, a
   certificate and an auditor's attestation (card_attested) must name a card
   the log published for their model, at an earlier leaf (the one rule for
   the order of leaves, `commitments.log.card_order_problem`, which the
   customer applies too). A certificate leaf (`certificate_committed`) states
   its decision, status, radius eps = E / 2^t, cap and lens summaries, and
   commits to its public signals under a salt the public never sees: the
   monitor checks that every stated field is possible under the card it
   names (`certificate_leaf_problem`: the rules of commitments.claims,
   restricted to what the leaf carries; the customer, who holds the salt,
   checks that the fields are its proof's), and that its decision is the one
   its request announced. An old certificate leaf served in full
   (`certificate_issued`) has its claims derived from its public signals and
   the card, as before.

Statistics per model: cards published and commitment changes, decision
requests, certificates and the share of requests answered by one (matched by
request id), flips, eps min/median/max as exact rationals, and the auditors'
attestations logged for its cards (how many, by which auditor: the name of
the auditor's key), and old certificate leaves served redacted. A
counterfactual flip certifies radius 0 and counts as eps = 0. Each certified radius is counted as exact or fast (a lower bound) by
the radius of the bucket its leaf names on its card, as a customer's verifier
labels it.

What counts as what:

- VIOLATION (exit status 1): the log contradicts itself or its signatures:
  the service presenting another log origin or key than the state pins,
  rollback, fork, a checkpoint not signed by the pinned key or for another
  origin, entries that do not hash to the signed root, a leaf that is not a
  canonical FairProof event, a published card the log cannot show as
  published, a decision, certificate or attestation under a card the log had
  not published (or published only at a later leaf), public signals or
  certificate fields no honest certificate under the card can have, a
  certificate proving another decision than its request announced, a
  redacted entry of another kind than an old certificate. A violation never advances the kept
  checkpoint: the state stays as it was, and the signed checkpoints involved
  are written under `evidence/`.
- FLAG (exit status 0): a model re-committed, i.e. a card published for a
  model id under another commitment than its previous card. The service lets
  an admin do this on purpose, so it is not an integrity failure; but every
  customer's verdicts about "the model" change with it, so each one is listed
  at the top of every report, for good.
- NOTE: a card replaced under the same commitment (new circuit buckets),
  certificates not matched to a logged decision request.

The state directory (default $XDG_STATE_HOME/fairproof/monitor/<service>,
see `default_state_dir`) holds `state.json` (service, pinned origin and key,
kept checkpoint and its compact range, per-model statistics),
`cards/<digest>.json` (every card the log published, checked against its
digest on every read), `report.json` and `evidence/`. Every file is written
atomically; one run at a time holds the directory's lock. A default
directory of the old layout (named after the log's origin) is copied to the
service's directory on its first run (`adopt_legacy_state_dir`), so nothing
kept there is lost.

Depends on pydantic and httpx only (matplotlib for plots, imported lazily):
the auditor installs the verifier client, never the bank's side.

The package: `errors` (the two failures), `checkpoints` (the pinned key and
signed trees), `state` (the state directory), `leaves` (auditing each leaf),
`following` (one run) and `rendering` (the report, as JSON, text and plots).
"""
from __future__ import annotations

from commitments.log import MAX_ENTRIES_PER_PAGE

from .checkpoints import (SignedTree, canonical_key, check_against_kept, check_consistent, claimed_origin,
                          fetch_log_key, log_identity_problem, log_key_verifier, open_checkpoint, parse_log_key)
from .errors import MonitorError, Violation
from .following import MonitorRun, Progress, check_log_identity, fetch_entries, monitor
from .leaves import Audit, CardSource, auditor_name, certificate_leaf_problem, count_certificate
from .rendering import (PlotsUnavailable, build_report, eps_summary, exact_decimal, median, model_report, plot_groups,
                        render_report, variant_of, write_plots)
from .state import (CARDS_DIR, EVIDENCE_DIR, LOCK_FILE, REPORT_FILE, STATE_FILE, STATE_VERSION, CardEvent, CardSeen,
                    ModelStats, MonitorState, Recommit, StateDir, adopt_legacy_state_dir, default_state_dir,
                    describe_recommit, legacy_state_dir, sanitise_origin, service_name, write_atomically)

__all__ = [
    "CARDS_DIR", "EVIDENCE_DIR", "LOCK_FILE", "MAX_ENTRIES_PER_PAGE", "REPORT_FILE", "STATE_FILE", "STATE_VERSION",
    "Audit", "CardEvent", "CardSeen", "CardSource", "ModelStats", "MonitorError", "MonitorRun", "MonitorState",
    "PlotsUnavailable", "Progress", "Recommit", "SignedTree", "StateDir", "Violation", "adopt_legacy_state_dir",
    "auditor_name", "build_report", "canonical_key", "certificate_leaf_problem", "check_against_kept",
    "check_consistent", "check_log_identity", "claimed_origin", "count_certificate", "default_state_dir",
    "describe_recommit", "eps_summary", "exact_decimal", "fetch_entries", "fetch_log_key", "legacy_state_dir",
    "log_identity_problem", "log_key_verifier", "median", "model_report", "monitor", "open_checkpoint",
    "parse_log_key", "plot_groups", "render_report", "sanitise_origin", "service_name", "variant_of",
    "write_atomically", "write_plots",
]
