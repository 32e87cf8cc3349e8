# NVIDIA's Triton container plus what textgate's Python-backend steps import (the
# triton-container repository target: <task>_tokenize and <task>_postprocess need tokenizers
# and numpy; <task>_model runs on the native onnxruntime_onnx backend, GPU or CPU).
#   docker build -f deploy/triton.Dockerfile -t textgate-triton .
# 24.10 ships Triton 2.51, the release the embedded server runs.
FROM nvcr.io/nvidia/tritonserver:24.10-py3
RUN python3 -m pip install --no-cache-dir "numpy==1.26.4" "tokenizers==0.20.3"
# the stubs' numpy on one BLAS thread: their products are small, and a thread per core costs
# more CPU in hand-offs than it saves (docs/benchmarks.md, "Serial BLAS")
ENV OPENBLAS_NUM_THREADS=1
# triton-server, the unprivileged user NVIDIA's image creates (uid 1000)
USER 1000
EXPOSE 8000 8001 8002
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=5 \
  CMD ["curl", "-fsS", "http://127.0.0.1:8000/v2/health/ready"]
ENTRYPOINT ["tritonserver"]
CMD ["--model-repository=/models", "--model-control-mode=explicit", "--load-model=*", \
     "--strict-readiness=true"]
