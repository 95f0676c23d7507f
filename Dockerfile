# The bank-side image: the prover service (`fairproof serve`, `fairproof worker`;
# see docker-compose.yml), certification, proving and the store. Training needs
# torch and runs outside this image; models are mounted under /models.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY circuits circuits
COPY commitments commitments
COPY fairness fairness
COPY offline_precompute offline_precompute
COPY prover_service prover_service
COPY statement statement
COPY transparency transparency
COPY verifier_client verifier_client
RUN pip install --no-cache-dir ".[prover]"

# The mcl wheel writes its shared library to the temp directory at import:
# it must be writable and allow execution.
ENV TMPDIR=/tmp FAIRPROOF_DATA_DIR=/data
VOLUME ["/models", "/data"]
EXPOSE 8000
ENTRYPOINT ["fairproof"]
CMD ["--help"]
