#!/bin/bash
# benchstack engine bootstrap: rendered per (experiment, instance type) by
# runners/providers/ec2/user_data.py. Nothing from the experiment is pasted into this
# script: its values arrive as one base64 line (launch_values_file), are decoded into
# a root-only file of shell-quoted assignments, and are read from there by this script, the
# engine unit and the cache push. No value can end a heredoc or become a command.
set -uo pipefail
exec > >(tee -a /var/log/benchstack-engine.log | logger -t benchstack-engine -s 2>/dev/console) 2>&1
VALUES=/etc/benchstack/launch.env
install -d -m 0700 /etc/benchstack
base64 -d > "$VALUES" <<< {{ launch_values_b64 }}
printf 'CACHE_BUCKET=%q\n' {{ cache_bucket }} >> "$VALUES"
chmod 0600 "$VALUES"
. "$VALUES"
echo "$DEVICE_POLICY"

CACHE_URI="s3://$CACHE_BUCKET/$CACHE_PREFIX"
CACHE_ROOT=/var/cache/benchstack
IMDS=http://169.254.169.254/latest

imds() {  # IMDSv2 only: a session token first, then the path
  local token
  token=$(curl -sf -X PUT "$IMDS/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 300") || return 1
  curl -sf -H "X-aws-ec2-metadata-token: $token" "$IMDS/$1"
}
export AWS_DEFAULT_REGION
AWS_DEFAULT_REGION=$(imds meta-data/placement/region)
printf 'AWS_DEFAULT_REGION=%q\n' "$AWS_DEFAULT_REGION" >> "$VALUES"

# 1. Stop the meter by ourselves at the experiment's expiry. The fleet request tags the
#    instance with benchstack:expires-at (ISO 8601 UTC); the launch template exposes tags
#    in instance metadata. Without the tag (a hand launch), the experiment's TTL from boot.
expires_at=$(imds meta-data/tags/instance/benchstack:expires-at || true)
now=$(date -u +%s)
if [ -n "$expires_at" ] && expiry=$(date -u -d "$expires_at" +%s 2>/dev/null); then
  source_of_expiry="tag benchstack:expires-at=$expires_at"
else
  expiry=$((now + FALLBACK_TTL_S))
  source_of_expiry="no expires-at tag; experiment TTL ${FALLBACK_TTL_S}s from boot"
fi
seconds_left=$((expiry - now))
[ "$seconds_left" -lt 60 ] && seconds_left=60
# Shutdown is terminate (launch template), and stopping the engine unit pushes the caches.
systemd-run --unit=benchstack-expiry --on-active="${seconds_left}s" /usr/bin/systemctl poweroff
echo "benchstack: shutdown in ${seconds_left}s ($source_of_expiry)"

# 2. Trust the device, not the catalog: report the live compute capability beside it.
if [ "$ACCELERATOR" = nvidia ]; then
  live=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1)
  if [ "$live" != "$CATALOG_COMPUTE_CAPABILITY" ]; then
    echo "benchstack: WARNING live compute capability '${live}' differs from the catalog's ${CATALOG_COMPUTE_CAPABILITY}"
  fi
fi

# 3. Restore model weights and compilation caches (a cold compile costs minutes).
mkdir -p "$CACHE_ROOT/models" "$CACHE_ROOT/compile"
for part in models compile; do
  started=$(date +%s)
  aws s3 sync --only-show-errors "$CACHE_URI/$part/" "$CACHE_ROOT/$part/" \
    || echo "benchstack: cache restore of $part failed; starting cold"
  echo "benchstack: restored $part: $(find "$CACHE_ROOT/$part" -type f | wc -l) files in $(( $(date +%s) - started ))s"
done

# 4. The cache push, run by the engine unit after the engine stops (shutdown included).
#    Symlinks are not followed: the Hugging Face cache links snapshots to blobs, and the
#    hub recreates the links from the restored blobs without downloading them again.
cat > /usr/local/sbin/benchstack-cache-push <<'PUSH'
#!/bin/bash
. /etc/benchstack/launch.env
export AWS_DEFAULT_REGION
for part in models compile; do
  aws s3 sync --only-show-errors --no-follow-symlinks "/var/cache/benchstack/$part/" \
    "s3://$CACHE_BUCKET/$CACHE_PREFIX/$part/" \
    && echo "benchstack: pushed $part cache" || echo "benchstack: push of $part cache failed"
done
PUSH
chmod 0755 /usr/local/sbin/benchstack-cache-push

# 5. Secrets and images the engine needs: a Hugging Face token for gated models, when the
#    account keeps one in SSM, handed over in a root-only env file (not on a command line);
#    a docker login when the engine image lives in ECR.
install -d -m 0700 /run/benchstack
: > /run/benchstack/engine.env
chmod 0600 /run/benchstack/engine.env
if hf_token=$(aws ssm get-parameter --name "$HF_TOKEN_PARAMETER" --with-decryption \
    --query Parameter.Value --output text 2>/dev/null); then
  echo "HF_TOKEN=$hf_token" > /run/benchstack/engine.env
  echo "benchstack: Hugging Face token read from $HF_TOKEN_PARAMETER"
else
  echo "benchstack: no $HF_TOKEN_PARAMETER parameter; gated models will not download"
fi
command -v docker >/dev/null || dnf install -y docker
systemctl enable --now docker
if [ -n "$ECR_REGISTRY" ]; then
  aws ecr get-login-password --region "$ECR_REGION" \
    | docker login --username AWS --password-stdin "$ECR_REGISTRY" \
    || echo "benchstack: docker login to $ECR_REGISTRY failed"
fi

# 6. The engine: one container, accelerator devices passed through, caches mounted.
cat > /usr/local/sbin/benchstack-engine <<'ENGINE'
#!/bin/bash
set -euo pipefail
. /etc/benchstack/launch.env
accel=()
case "$ACCELERATOR" in
  nvidia) accel=(--gpus all) ;;
  aws-neuron) for dev in /dev/neuron*; do accel+=(--device="$dev"); done ;;
esac
exec /usr/bin/docker run --rm --name benchstack-engine "${accel[@]}" --ipc=host \
  -p "$PORT:$PORT" \
  -v "/var/cache/benchstack/models:$MODEL_CACHE_DIR" \
  -v "/var/cache/benchstack/compile:$COMPILE_CACHE_DIR" \
  --env-file /run/benchstack/engine.env "${DOCKER_ENV[@]}" \
  "$IMAGE" "${ENGINE_ARGS[@]}"
ENGINE
chmod 0755 /usr/local/sbin/benchstack-engine

cat > /etc/systemd/system/benchstack-engine.service <<'UNIT'
[Unit]
Description=benchstack engine
Requires=docker.service
After=docker.service network-online.target
Wants=network-online.target

[Service]
ExecStartPre=-/usr/bin/docker rm -f benchstack-engine
ExecStart=/usr/local/sbin/benchstack-engine
ExecStop=/usr/bin/docker stop -t 30 benchstack-engine
ExecStopPost=/usr/local/sbin/benchstack-cache-push
TimeoutStopSec=900
Restart=no

[Install]
WantedBy=multi-user.target
UNIT

systemctl daemon-reload
systemctl enable --now benchstack-engine
echo "benchstack: engine unit started on port $PORT"

# >>> benchstack telemetry (issue 19) >>>
# Accelerator samples at 1 Hz and the engine's log, copied to the experiment's cache prefix
# under telemetry/<run id>/ every 30 s and once more when the instance shuts down (the unit
# stops after the engine unit, before the network). The run's teardown reads them from
# there into the run folder. Like the cache push, the scripts read their values from the
# launch values file, never from text pasted into them.
telemetry_run=$(imds meta-data/tags/instance/benchstack:run-id || true)
printf 'TELEMETRY_DIR=%q\nTELEMETRY_URI=%q\n' /var/log/benchstack-telemetry \
  "$CACHE_URI/telemetry/${telemetry_run:-untagged-$(imds meta-data/instance-id)}" >> "$VALUES"
. "$VALUES"
mkdir -p "$TELEMETRY_DIR"
cat > /usr/local/sbin/benchstack-device-sampler <<'SAMPLER'
#!/bin/bash
# nvidia-smi CSV rows, or neuron-monitor reports each prefixed with its epoch time.
. /etc/benchstack/launch.env
if [ "$ACCELERATOR" = nvidia ] && command -v nvidia-smi >/dev/null; then
  exec nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory,memory.used,memory.total,clocks.mem,power.draw \
    --format=csv,noheader,nounits -l 1 >> "$TELEMETRY_DIR/nvidia-smi.csv"
elif command -v neuron-monitor >/dev/null; then
  printf '%s\n' '{"period": "1s", "neuron_runtimes": [{"tag_filter": ".*", "metrics": [{"type": "neuroncore_counters"}, {"type": "memory_used"}]}], "system_metrics": []}' > "$TELEMETRY_DIR/neuron-monitor.conf"
  neuron-monitor -c "$TELEMETRY_DIR/neuron-monitor.conf" | while IFS= read -r line; do
    printf '{"t": %s, "sample": %s}\n' "$(date +%s.%N)" "$line"
  done >> "$TELEMETRY_DIR/neuron-monitor.jsonl"
else
  echo "no nvidia-smi or neuron-monitor on this instance" > "$TELEMETRY_DIR/device-missing.txt"
  exec sleep infinity
fi
SAMPLER
cat > /usr/local/sbin/benchstack-telemetry-push <<'PUSH'
#!/bin/bash
. /etc/benchstack/launch.env
export AWS_DEFAULT_REGION
journalctl -u benchstack-engine -o short-iso --no-pager > "$TELEMETRY_DIR/engine.log" 2>&1
for f in "$TELEMETRY_DIR"/*; do
  aws s3 cp --only-show-errors "$f" "$TELEMETRY_URI/$(basename "$f")" || echo "benchstack: telemetry push of $f failed"
done
PUSH
chmod 0755 /usr/local/sbin/benchstack-device-sampler /usr/local/sbin/benchstack-telemetry-push
cat > /etc/systemd/system/benchstack-telemetry.service <<'UNIT'
[Unit]
Description=benchstack device samples and telemetry push
Before=benchstack-engine.service
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=/usr/local/sbin/benchstack-device-sampler
ExecStopPost=/usr/local/sbin/benchstack-telemetry-push
TimeoutStopSec=120

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now benchstack-telemetry
systemd-run --unit=benchstack-telemetry-push --on-active=30s --on-unit-active=30s \
  /usr/local/sbin/benchstack-telemetry-push
echo "benchstack: telemetry to $TELEMETRY_URI/"
# <<< benchstack telemetry <<<
