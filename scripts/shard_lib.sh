# Sourced by scripts/mix_data.sh and scripts/data_mix.sh (which set PY and cd to the repository root).
# unpack_shard NAME OUT: the committed shard data/smollm2/NAME.npz.xz and its later parts (NAME.partK.npz.xz, in
# order) as one JSONL file OUT (d3d.training.data_archive writes it atomically and refuses an existing file), with
# the shard's meta.json beside it. A bad part fails the call before anything is written.
unpack_shard() {
  local name=$1 out=$2 parts
  mapfile -t parts < <(ls data/smollm2/"$name".part*.npz.xz 2>/dev/null | sort -V)
  $PY -m d3d.training.data_archive unpack "data/smollm2/$name.npz.xz" "${parts[@]}" "$out" \
    && cp "data/smollm2/$name.meta.json" "${out%.jsonl}.meta.json"
}
