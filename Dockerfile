# The bank-side image: the prover service (`fairproof serve`, `fairproof worker`;
# see docker-compose.yml), certification, proving and the store. Training needs
# torch and runs outside this image; models are mounted under /models.
# snarkjs's browser build and canonicalize (RFC 8785) for the verification page (/verify), from npm as
# package-lock.json pins them.
FROM node:20-slim AS browser-build
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml README.md ./
# Dependencies exactly as locked, each file checked against its hash; then the project itself.
COPY requirements/prover.lock.txt requirements/
RUN pip install --no-cache-dir --require-hashes -r requirements/prover.lock.txt
COPY audits audits
COPY circuits circuits
COPY commitments commitments
COPY fairness fairness
COPY offline_precompute offline_precompute
COPY prover_service prover_service
COPY statement statement
COPY transparency transparency
COPY verifier_client verifier_client
COPY --from=browser-build /build/node_modules/snarkjs/build/snarkjs.min.js verifier_client/page/vendor/snarkjs.min.js
COPY --from=browser-build /build/node_modules/canonicalize/lib/canonicalize.js verifier_client/page/vendor/canonicalize.js
RUN pip install --no-cache-dir --no-deps ".[prover]"

# The native kernels (Fr NTT and constraint rows, fixed-base windows, batch-affine MSMs) are compiled now,
# with a compiler that does not stay in the image, and are then required: an image whose kernels cannot load
# refuses to prove instead of silently using numpy. mcl's library is cached beside them, so no process
# decodes it from the wheel at start.
ENV FAIRPROOF_NATIVE_DIR=/opt/fairproof/native
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
 && FAIRPROOF_NATIVE_NTT=required python -c "from circuits.backends.native import fixed_base, kernels; kernels.load(); fixed_base.load(); from circuits.backends.native import msm; msm.load(); from circuits.backends import get_backend; get_backend('mcl')" \
 && apt-get purge -y gcc libc6-dev && apt-get autoremove -y && rm -rf /var/lib/apt/lists/*
ENV FAIRPROOF_NATIVE_NTT=required

# The service runs as an unprivileged user; mounted model and key directories must be readable by it
# (and writable for workers, which set up keys and publish cards).
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin fairproof
USER fairproof

# The mcl wheel writes its shared library to the temp directory at import:
# it must be writable and allow execution.
ENV TMPDIR=/tmp FAIRPROOF_DATA_DIR=/data
VOLUME ["/models", "/data"]
EXPOSE 8000
ENTRYPOINT ["fairproof"]
CMD ["--help"]
