# signoff-bot GitHub App: slim, non-root, with a health check.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    SIGNOFF_BOT_DB=/data/signoff-bot.db
WORKDIR /app
# libpq5: the PostgreSQL client library psycopg loads when SIGNOFF_BOT_DB is a postgresql:// URL
RUN apt-get update && apt-get install -y --no-install-recommends libpq5 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY app ./app
COPY checks ./checks
COPY templates ./templates
RUN pip install . && useradd --system --uid 10001 --home /data signoff && mkdir -p /data && chown signoff /data
USER signoff
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"
CMD ["signoff-bot", "serve", "--host", "0.0.0.0", "--port", "8000"]
