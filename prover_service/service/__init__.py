"""The prover service: the bank's HTTP API over the proving pipeline.

    settings     configuration from the environment (one typed object, no globals)
    schema       the service's tables (SQLAlchemy 2.0 typed ORM)
    database     engine, sessions and Alembic migrations
    jobs         the job ledger: submit, claim with a lease, finish exactly once
    registry     committed models the service knows, and their provers
    runner       runs one job: certificate (certify, witness, prove) or precompute
    dispatch     who runs jobs: threads in this process, or a procrastinate queue
    app          the FastAPI application
"""
