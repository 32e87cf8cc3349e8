# The textgate gateway: HTTP front door to one or more Triton servers (deploy/compose.yaml).
#   docker build -f deploy/gateway.Dockerfile -t textgate-gateway .
# Slim and non-root; no Triton, torch or transformers inside (Triton runs in its own image).
# Base image and every Python dependency pinned: the same file builds the same image.
FROM python:3.11.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY textgate ./textgate
# The versions CI tests with. --no-deps for textgate itself: the gateway never imports onnx,
# onnxruntime or matplotlib (export and training do), which keeps the image small.
RUN python -m venv /app/venv \
 && /app/venv/bin/pip install --no-cache-dir \
      "numpy==1.26.4" "tokenizers==0.23.3" "rich==15.0.0" "pyyaml==6.0.4" \
      "tritonclient[grpc,http]==2.73.0" "prometheus-client==0.26.0" \
      "confluent-kafka==2.16.1" "fastapi==0.165.0" "uvicorn==0.54.0" \
      "uvloop==0.23.0" "httptools==0.9.0" "orjson==3.13.0" "sniffio==1.3.1" \
 && /app/venv/bin/pip install --no-cache-dir --no-deps .

FROM python:3.11.11-slim-bookworm
COPY --from=build /app/venv /app/venv
RUN useradd --system --uid 10001 --home-dir /var/lib/textgate --create-home textgate
USER 10001
WORKDIR /var/lib/textgate
ENV PATH=/app/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8080/readyz', timeout=2)"]
ENTRYPOINT ["textgate", "serve"]
CMD ["--config", "/etc/textgate/textgate.yaml", "--host", "0.0.0.0"]
