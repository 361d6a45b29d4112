# signoff-bot GitHub App: slim, non-root, with a health check.
#
#   docker build -t signoff-bot .                       # on python:3.11-slim
#   docker build --build-arg BASE=IMAGE -t signoff-bot . # on another image whose `python`/`pip` install it
#
# The project is built into a wheel in a stage of its own; the image keeps only what the wheel installs
# (no source tree, no build/ directory).
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY checks ./checks
COPY templates ./templates
RUN pip wheel --no-deps --wheel-dir /wheels .

FROM ${BASE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    SIGNOFF_BOT_DB=/data/signoff-bot.db SIGNOFF_BOT_PORT=8000
# libpq5: the PostgreSQL client library psycopg loads when SIGNOFF_BOT_DB is a postgresql:// URL
RUN apt-get update && apt-get install -y --no-install-recommends libpq5 && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /tmp/wheels
RUN pip install /tmp/wheels/*.whl && rm -rf /tmp/wheels \
    && useradd --system --uid 10001 --home /data signoff && mkdir -p /data && chown signoff /data
USER signoff
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000
# SIGNOFF_BOT_PORT: the port it serves on (8000; another where the container shares the host's network)
HEALTHCHECK --interval=30s --timeout=3s --retries=3 \
  CMD python -c "import os,sys,urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ['SIGNOFF_BOT_PORT'], timeout=2).status == 200 else 1)"
CMD ["sh", "-c", "exec signoff-bot serve --host 0.0.0.0 --port \"$SIGNOFF_BOT_PORT\""]
