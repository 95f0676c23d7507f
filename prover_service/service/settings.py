"""Service configuration, read once from the environment into a typed object.

`Settings` is a pydantic-settings `BaseSettings`: each field is read from
FAIRPROOF_<FIELD NAME> (empty values ignored), validated and frozen.
Every variable is documented in docs/guides/operations.md ("Settings"); the
docker-compose file sets the same names.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Mapping

from pydantic import BeforeValidator, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from commitments.attestation import AttestationError, parse_auditor_key
from fairness.radius import DEFAULT_RADIUS, Radius
from prover_service.commands.radius_option import DEFAULT_EXACT_BUDGET, DEFAULT_EXACT_MAX_CONSTRAINTS

ENV_PREFIX = "FAIRPROOF_"
DEFAULT_DATABASE_FILE = "service.sqlite"


def _integer_text(value):
    """Environment values arrive as text; a Literal of ints compares them as ints."""
    return int(value) if isinstance(value, str) and value.strip().isdigit() else value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_ignore_empty=True, frozen=True, extra="forbid")

    # Committed model directories (fairproof train/commit) live here; admins register them by name.
    models_dir: Path = Path("var/models")
    # Salts kept apart from the models (SECRETS_DIR/<model directory name>/salt): set where proofs are
    # made; left unset where nothing proves (the API beside procrastinate workers), which then never
    # reads a salt. Unset where proofs are made: each model directory's own secret/salt.
    secrets_dir: Path | None = None
    # The service's own database: jobs, certificates, cards, audit log.
    database_url: str = ""
    # How long serve and worker wait for that database to answer at start (retried with backoff).
    database_wait_seconds: float = Field(default=60.0, ge=0)
    # Precompute store for every model (empty: each model's own SQLite file).
    store_url: str = ""
    # Admin API key; admin endpoints are refused when unset.
    admin_api_key: SecretStr | None = None
    # Who runs jobs: threads inside the service, or procrastinate workers sharing PostgreSQL.
    queue: Literal["inprocess", "procrastinate"] = "inprocess"
    workers: int = Field(default=1, ge=0, le=32)  # in-process worker threads
    backend: str | None = None  # curve backend: mcl, reference, or fastest available
    # How the models' certificates are certified and proved, unless a decision request names another mode:
    # "hybrid" (the exact radius when region enumeration finishes within exact_budget seconds, else the bound
    # radius; the exact and the bound statements' buckets), "exact" (the true radius rounded down to 2^-t,
    # proved minimal by a counterexample), "bound" (linear bound propagation, no regions: a lower bound) or
    # "fast" (GeoCert's projection radius, a lower bound that can lie far below the true one).
    radius: Radius = DEFAULT_RADIUS
    # Hybrid: how long region enumeration may run for one certificate before the bound radius is proved.
    exact_budget: float = Field(default=DEFAULT_EXACT_BUDGET, gt=0, le=24 * 3600)
    # Hybrid: the most constraints an exact statement may have to be proved online (else the bound radius).
    exact_max_constraints: int = Field(default=DEFAULT_EXACT_MAX_CONSTRAINTS, ge=1, le=2**28)
    # Bucket ladder for buckets the card does not publish yet: each size 2 or 4 times the last (a proof
    # reveals its covering-set sizes within that factor; 2 pads less and needs about twice the keys).
    bucket_growth: Annotated[Literal[2, 4], BeforeValidator(_integer_text)] = 4
    # Exact certificates proved slice by slice (one proof per slice, each in its own slice's bucket).
    per_slice: bool = False
    data_dir: str | None = None  # datasets, for precompute key setup on test customers
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    # A client has this long to send one request whole (headers and body) once it starts one, or once its
    # connection opens: a client trickling bytes (slowloris) is answered 408 and cut off.
    read_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    # Open client connections served at once; a request on a connection beyond them is answered 503.
    max_connections: int = Field(default=1000, ge=1, le=100_000)
    # A job whose worker went silent this long is resumed by another worker; running workers renew their
    # leases four times per lease and the queue is swept every second, so a worker killed mid-proof has its
    # job taken up again within lease + 1 s.
    lease_seconds: float = Field(default=3.0, gt=1.0)
    # SIGTERM: open requests get up to half of this to finish, then proofs in flight the other half; a proof
    # still running then is handed back to the queue (resumed at the next start) and the process exits.
    shutdown_grace_seconds: float = Field(default=25.0, ge=1.0)
    max_attempts: int = Field(default=3, ge=1)
    # Backpressure: certificate jobs waiting or running, in all and per model, beyond which a new
    # decision request gets 429 with Retry-After (each costs seconds of proving).
    max_queued_jobs: int = Field(default=200, ge=1)
    max_queued_per_model: int = Field(default=100, ge=1)
    # Precompute jobs (region enumeration, key setup: minutes each) waiting or running at once, beyond which
    # an admin's new request gets 429; the same request again answers the job already waiting.
    max_queued_precompute: int = Field(default=4, ge=1, le=1000)
    # Decision requests one client (peer address) may make a minute, in bursts up to as many; 0: no limit
    # (behind a reverse proxy every client is the proxy: limit per client there instead).
    rate_limit_per_minute: int = Field(default=60, ge=0)
    # Bucket keys each proving thread keeps in memory per model (least recently used dropped first).
    max_hot_keys: int = Field(default=4, ge=1, le=64)
    log_level: str = "INFO"
    # Swagger UI and ReDoc pages (their scripts come from a CDN): for development only.
    api_docs: bool = False
    # Keys of circuit buckets nobody has set up: a one-contribution ceremony on this phase-1 file
    # (the card lists the bank as its only contributor); unset, such a bucket's job fails with the reason.
    ptau: Path | None = None
    # Draw every secret in the service instead (the card says "single-party"): tests and experiments only.
    single_party_setup: bool = False
    # The transparency log's signing key (a C2SP signed-note key), kept outside the models directory;
    # created on first start if absent. Unset: log-key/log.key beside the models directory.
    log_key_file: Path | None = None
    # The log's origin line and key name, for a key created on first start.
    log_origin: str = Field(default="fairproof.localhost/log", min_length=1, max_length=255,
                            pattern=r"^[^\s+]+$")
    # Witnesses whose cosignatures the log keeps and serves: comma-separated cosignature/v1 verifier keys.
    log_witnesses: str = ""
    # Auditors whose attestations of the model cards the service accepts without the admin key:
    # comma-separated Ed25519 signed-note verifier keys (name+keyid+base64). Unset: attestations
    # are posted with the admin key only.
    auditors: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "Settings":
        if self.admin_api_key is not None and len(self.admin_api_key.get_secret_value()) < 16:
            raise ValueError("FAIRPROOF_ADMIN_API_KEY must be at least 16 characters (use a random token)")
        if self.per_slice and self.radius != Radius.EXACT:
            raise ValueError("FAIRPROOF_PER_SLICE needs FAIRPROOF_RADIUS=exact (fast statements are never split)")
        if self.ptau is not None and self.single_party_setup:
            raise ValueError("FAIRPROOF_PTAU and FAIRPROOF_SINGLE_PARTY_SETUP exclude each other")
        models = self.models_dir.resolve()
        if self.resolved_log_key_file.resolve().is_relative_to(models):
            raise ValueError("FAIRPROOF_LOG_KEY_FILE must lie outside the models directory: whoever can "
                             "write model directories must not hold the log's signing key")
        if self.secrets_dir is not None and self.secrets_dir.resolve().is_relative_to(models):
            raise ValueError("FAIRPROOF_SECRETS_DIR must lie outside the models directory: it keeps the salts "
                             "away from processes that read the models")
        for key in self.auditor_keys:
            try:
                parse_auditor_key(key)
            except AttestationError as exc:
                raise ValueError(f"FAIRPROOF_AUDITORS: {exc} (give comma-separated verifier keys, "
                                 "name+keyid+base64)") from None
        if self.queue == "procrastinate" and not self.resolved_database_url.startswith("postgresql"):
            raise ValueError("FAIRPROOF_QUEUE=procrastinate needs a PostgreSQL FAIRPROOF_DATABASE_URL "
                             "(the queue lives in that database)")
        return self

    @property
    def proves_here(self) -> bool:
        """Whether this process makes proofs (and so needs the salts)."""
        return self.queue == "inprocess" and self.workers > 0

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.models_dir / DEFAULT_DATABASE_FILE).resolve()}"

    @property
    def resolved_log_key_file(self) -> Path:
        return self.log_key_file or self.models_dir.resolve().parent / "log-key" / "log.key"

    @property
    def witness_keys(self) -> tuple[str, ...]:
        return tuple(k.strip() for k in self.log_witnesses.split(",") if k.strip())

    @property
    def auditor_keys(self) -> tuple[str, ...]:
        """The configured auditors' verifier keys (FAIRPROOF_AUDITORS), as given."""
        return tuple(k.strip() for k in self.auditors.split(",") if k.strip())

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides) -> "Settings":
        """The settings from the process environment (pydantic-settings), or from `environ` instead when given;
        `overrides` (command-line options; None: not given) win over both."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if environ is None:
            return cls(**given)
        values: dict = {}
        for name in cls.model_fields:
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw is not None and raw.strip() != "":
                values[name] = raw.strip()
        checked = _GivenEnvironment(**{**values, **given})
        return cls.model_construct(**checked.model_dump())  # validated above; a plain Settings again

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        return (init_settings, env_settings)  # no .env file and no secrets directory: the environment only


class _GivenEnvironment(Settings):
    """Settings validated from the values given only (from_env with an explicit environment)."""

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        return (init_settings,)
