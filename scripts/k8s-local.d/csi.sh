# shellcheck shell=bash
# Sourced by scripts/k8s-local: the storage driver with snapshots (`up --csi`, `build-csi`).
#
# Parts, all built offline from the Go module proxy and imported as FROM-scratch images (no registry):
#   layerbench-csi-hostpath  scripts/k8s-local.d/csi-hostpath: directories as volumes, tar archives as
#                            snapshots, registers itself with the kubelet (the Kubernetes CSI hostpath
#                            driver and node-driver-registrar modules are not served by the proxy here)
#   csi-provisioner          github.com/kubernetes-csi/external-provisioner/v6 (PVC -> CreateVolume)
#   csi-snapshotter          github.com/kubernetes-csi/external-snapshotter/v8 (sidecar: CreateSnapshot)
#   snapshot-controller      the same module (VolumeSnapshot -> VolumeSnapshotContent), + its CRDs
set -euo pipefail

CSI_PROVISIONER_VERSION=${K8S_LOCAL_CSI_PROVISIONER_VERSION:-v6.4.0}
CSI_SNAPSHOTTER_VERSION=${K8S_LOCAL_CSI_SNAPSHOTTER_VERSION:-v8.7.0}
CSI_DRIVER=hostpath.csi.layerbench.local
CSI_NS=layerbench-csi
CSI_STORAGE_CLASS=layerbench-csi-hostpath
CSI_SNAPSHOT_CLASS=layerbench-csi-hostpath-snapclass
CSI_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CSI_SRC=$CSI_HERE/csi-hostpath
CSI_MANIFEST=$CSI_HERE/csi-hostpath.yaml
CSI_CACHE=$CACHE/csi
CSI_STAMP=$CSI_CACHE/BUILD-INFO
CSI_BINS=(layerbench-csi-hostpath csi-provisioner csi-snapshotter snapshot-controller)
CSI_DATA=$K/csi-hostpath

# what the cached builds were made from: the sidecars' versions; the driver's source (rebuilt alone, ~1 min)
csi_sidecars_key() { echo "provisioner=$CSI_PROVISIONER_VERSION snapshotter=$CSI_SNAPSHOTTER_VERSION"; }
csi_driver_key() { # its tests (go test in that folder) are not part of the image
  (cd "$CSI_SRC" && cat go.mod go.sum $(printf '%s\n' ./*.go | grep -v '_test\.go$')) | sha256sum | cut -c1-16
}
csi_image() { # binary -> image reference
  case $1 in
    layerbench-csi-hostpath) echo "localhost/layerbench/csi-hostpath:$(csi_driver_key)" ;;
    csi-provisioner) echo "localhost/layerbench/csi-provisioner:$CSI_PROVISIONER_VERSION" ;;
    *) echo "localhost/layerbench/$1:$CSI_SNAPSHOTTER_VERSION" ;;
  esac
}

csi_sidecars_ok() {
  [ -f "$CSI_STAMP" ] && [ "$(sed -n 's/^key=//p' "$CSI_STAMP" | cut -d' ' -f1-2)" = "$(csi_sidecars_key)" ] || return 1
  local b; for b in "${CSI_BINS[@]:1}"; do [ -f "$CSI_CACHE/images/$b.tar" ] || return 1; done
  [ -f "$CSI_CACHE/crd/snapshot.storage.k8s.io_volumesnapshots.yaml" ]
}
csi_driver_ok() {
  [ -f "$CSI_CACHE/images/layerbench-csi-hostpath.tar" ] &&
    [ "$(cat "$CSI_CACHE/images/layerbench-csi-hostpath.key" 2>/dev/null)" = "$(csi_driver_key)" ]
}
csi_cache_ok() { csi_sidecars_ok && csi_driver_ok; }

# a docker-archive of a FROM-scratch image holding one static binary as its entrypoint
make_scratch_image() { # binary-path image-ref out.tar
  local d; d=$(mktemp -d /tmp/k8s-local-image.XXXXXX)
  mkdir -p "$d/root/tmp" "$d/out"; chmod 1777 "$d/root/tmp"
  cp "$1" "$d/root/$(basename "$1")"; chmod 755 "$d/root/$(basename "$1")"
  tar -C "$d/root" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$d/layer.tar" .
  local lsha; lsha=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
  printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Entrypoint":["/%s"],"Env":["PATH=/"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"layerbench scripts/k8s-local build-csi"}]}' \
    "$(basename "$1")" "$lsha" >"$d/config.json"
  local csha; csha=$(sha256sum "$d/config.json" | cut -d' ' -f1)
  mkdir -p "$d/out/$lsha"; mv "$d/layer.tar" "$d/out/$lsha/layer.tar"; cp "$d/config.json" "$d/out/$csha.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$csha" "$2" "$lsha" >"$d/out/manifest.json"
  tar -C "$d/out" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$3.tmp" manifest.json "$csha.json" "$lsha"
  mv "$3.tmp" "$3"
  rm -rf "$d"
}

# a module's source, writable, in the build directory (module zips are read-only in the cache)
csi_module_src() { # module@version dest
  logged go mod download "$1"
  rm -rf "$2"; cp -r "$(go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')" "$2"; chmod -R u+w "$2"
}

csi_go_env() { # work-dir: Go caches there, offline-friendly flags, cwd there
  rm -rf "$1"; mkdir -p "$1/bin" "$CSI_CACHE/images" "$CSI_CACHE/crd"; cd "$1"
  export GOMODCACHE=$1/gomod GOCACHE=$1/gocache GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
  export GOWORK=off # the sidecars' go build alone names its go.work
  BUILD_LOG=$CSI_CACHE/build.log
}
csi_drop_work() { cd /; chmod -R u+w "$1" 2>/dev/null || true; rm -rf "$1"; }

# The driver's go.mod requires the sidecars' versions of grpc, protobuf, the CSI spec and golang.org/x/*,
# so building it after them in the same GOCACHE compiles only its own package.
build_csi_driver() { # work-dir (csi_go_env'd)
  local t0=$SECONDS key; key=$(csi_driver_key)
  say "csi: building layerbench-csi-hostpath (scripts/k8s-local.d/csi-hostpath, source $key)"
  (cd "$CSI_SRC" && logged go build -trimpath -ldflags "-s -w -X main.version=$key" \
    -o "$1/bin/layerbench-csi-hostpath" .)
  make_scratch_image "$1/bin/layerbench-csi-hostpath" "$(csi_image layerbench-csi-hostpath)" \
    "$CSI_CACHE/images/layerbench-csi-hostpath.tar"
  echo "$key" >"$CSI_CACHE/images/layerbench-csi-hostpath.key"
  say "csi: driver built in $((SECONDS - t0))s"
}

# One workspace (go.work) over the snapshotter, its client and the provisioner: one build list, so every
# shared dependency (k8s.io/* v0.37.0, grpc, protobuf, csi-lib-utils...) is compiled once for all three
# binaries by one `go build`. The provisioner's go.mod pins the k8s.io staging modules to an older minor
# by replace lines, which would conflict with the snapshotter's: they are dropped, so the snapshotter's
# (the same minor as both modules' requires) decide.
replaced_modules() { # go.mod -> the module paths it replaces, one a line (single lines and replace blocks)
  awk '/^replace *\(/ {b = 1; next} b && /^\)/ {b = 0; next}
    b && /=>/ {print $1} !b && /^replace [^(]*=>/ {print $2}' "$1" | sort -u
}
csi_sidecars_workspace() { # work-dir
  local snapmod=github.com/kubernetes-csi/external-snapshotter
  csi_module_src "$snapmod/v8@$CSI_SNAPSHOTTER_VERSION" "$1/external-snapshotter"
  csi_module_src "$snapmod/client/v8@$CSI_SNAPSHOTTER_VERSION" "$1/snapshot-client"
  csi_module_src "github.com/kubernetes-csi/external-provisioner/v6@$CSI_PROVISIONER_VERSION" "$1/external-provisioner"
  # upstream replaces its client module by ./client, which the module zip leaves out: the workspace has it
  (cd "$1/external-snapshotter" && go mod edit -dropreplace "$snapmod/client/v8")
  local drops; mapfile -t drops < <(replaced_modules "$1/external-provisioner/go.mod" | sed 's/^/-dropreplace=/')
  [ ${#drops[@]} = 0 ] || (cd "$1/external-provisioner" && go mod edit "${drops[@]}")
  (cd "$1" && rm -f go.work && GOWORK=$1/go.work GOFLAGS=-buildvcs=false go work init ./external-snapshotter ./snapshot-client ./external-provisioner)
}

build_csi_sidecars() { # work-dir (csi_go_env'd)
  local t0=$SECONDS work=$1 b
  say "csi: building the sidecars into $CSI_CACHE (once per machine; output in $BUILD_LOG)"
  say "csi 1/2: csi-snapshotter + snapshot-controller (github.com/kubernetes-csi/external-snapshotter/v8@$CSI_SNAPSHOTTER_VERSION) and csi-provisioner (github.com/kubernetes-csi/external-provisioner/v6@$CSI_PROVISIONER_VERSION), one go build"
  csi_sidecars_workspace "$work"
  # workspace mode refuses -mod=mod; go.work.sum takes the checksums the modules' go.sum files lack
  (cd "$work" && GOWORK=$work/go.work GOFLAGS=-buildvcs=false logged go build -trimpath \
    -ldflags "-s -w -X main.version=$CSI_SNAPSHOTTER_VERSION" \
    -ldflags "./external-provisioner/cmd/csi-provisioner=-s -w -X main.version=$CSI_PROVISIONER_VERSION" \
    -o "$work/bin/" ./external-snapshotter/cmd/csi-snapshotter ./external-snapshotter/cmd/snapshot-controller \
    ./external-provisioner/cmd/csi-provisioner)
  rm -f "$CSI_CACHE"/crd/*.yaml
  cp "$work"/snapshot-client/config/crd/*snapshot*.storage.k8s.io_*.yaml "$CSI_CACHE/crd/"
  say "csi 2/2: FROM-scratch images"
  for b in "${CSI_BINS[@]:1}"; do make_scratch_image "$work/bin/$b" "$(csi_image "$b")" "$CSI_CACHE/images/$b.tar"; done
  { echo "key=$(csi_sidecars_key)"; echo "go=$(go env GOVERSION)"; echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "build_seconds=$((SECONDS - t0))"
    (cd "$CSI_CACHE" && sha256sum images/csi-* images/snapshot-* crd/*); } >"$CSI_STAMP.tmp"
  mv "$CSI_STAMP.tmp" "$CSI_STAMP"
  say "csi: sidecars built in $((SECONDS - t0))s"
}

# the sidecars, then the driver, in one set of Go caches, deleted once at the end
ensure_csi_built() {
  csi_cache_ok && return 0
  need_root
  check_go
  local work=$CSI_CACHE/.work
  csi_go_env "$work"; : >"$BUILD_LOG"
  csi_sidecars_ok || build_csi_sidecars "$work"
  csi_driver_ok || build_csi_driver "$work"
  say "deleting the Go module and build caches of the CSI build ($(du -sh "$work" 2>/dev/null | cut -f1))"
  csi_drop_work "$work"
}

cmd_build_csi() {
  need_root
  take_lock 8 "$CACHE_ROOT/k8s/.build.lock"
  if csi_cache_ok; then say "CSI parts already built: $CSI_CACHE"; return 0; fi
  ensure_csi_built
}

# The kubelet's root dir as a shared mount: the driver's container mounts volumes below it with
# Bidirectional propagation, which needs a shared source (this host's / is private). Under $K, so
# `down` unmounts it with the rest.
share_kubelet_dir() {
  local d=$K/kubelet
  if [ "$(findmnt -rn -o TARGET --target "$d" 2>/dev/null | sed -n 1p)" != "$d" ]; then
    mount --rbind "$d" "$d"
  fi
  mount --make-rshared "$d"
}

csi_manifest() {
  sed -e "s|@NS@|$CSI_NS|g" -e "s|@DRIVER@|$CSI_DRIVER|g" -e "s|@KUBELET_DIR@|$K/kubelet|g" \
    -e "s|@DATA_DIR@|$CSI_DATA|g" -e "s|@NODE@|$NODE_NAME|g" -e "s|@STORAGE_CLASS@|$CSI_STORAGE_CLASS|g" \
    -e "s|@SNAPSHOT_CLASS@|$CSI_SNAPSHOT_CLASS|g" -e "s|@IMG_DRIVER@|$(csi_image layerbench-csi-hostpath)|g" \
    -e "s|@IMG_PROVISIONER@|$(csi_image csi-provisioner)|g" -e "s|@IMG_SNAPSHOTTER@|$(csi_image csi-snapshotter)|g" \
    -e "s|@IMG_SNAPSHOT_CONTROLLER@|$(csi_image snapshot-controller)|g" "$CSI_MANIFEST"
}

csi_driver_registered() { # the kubelet lists the driver on its CSINode
  [[ " $(kc get csinode "$NODE_NAME" -o jsonpath='{.spec.drivers[*].name}' 2>/dev/null) " == *" $CSI_DRIVER "* ]]
}
csi_pods_ready() {
  local s; s=$(kc -n "$CSI_NS" get pods -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}' 2>/dev/null)
  [ "$(wc -w <<<"$s")" -ge 2 ] && [[ "$s" != *False* ]]
}

install_csi() {
  local t0=$SECONDS b
  share_kubelet_dir
  mkdir -p "$CSI_DATA"
  for b in "${CSI_BINS[@]}"; do
    grep -qxF "$(csi_image "$b")" <<<"$(ctrc -n k8s.io images ls -q)" && continue
    ctrc -n k8s.io images import "$CSI_CACHE/images/$b.tar" >/dev/null || die "could not import $b's image"
  done
  say "CSI images imported ($((SECONDS - t0))s)"
  kc apply -f "$CSI_CACHE/crd/" >/dev/null || die "could not create the VolumeSnapshot CRDs"
  kc wait --for=condition=Established --timeout=60s -f "$CSI_CACHE/crd/" >/dev/null ||
    die "VolumeSnapshot CRDs not established within 60s"
  csi_manifest | kc apply -f - >/dev/null || die "could not apply $CSI_MANIFEST"
  waitfor "CSI driver $CSI_DRIVER registered with the kubelet" 180 kubelet csi_driver_registered ||
    { kc -n "$CSI_NS" get pods -o wide >&2 || true; die "CSI driver not registered within 180s (kubectl -n $CSI_NS logs ...)"; }
  waitfor "CSI pods Ready" 120 kubelet csi_pods_ready ||
    { kc -n "$CSI_NS" get pods -o wide >&2 || true; die "CSI pods not Ready within 120s"; }
  sed -i '/^\(CSI_DRIVER\|STORAGE_CLASS\|VOLUME_SNAPSHOT_CLASS\)=/d' "$K/cluster.env"
  echo "CSI_DRIVER=$CSI_DRIVER" >>"$K/cluster.env"
  echo "STORAGE_CLASS=$CSI_STORAGE_CLASS" >>"$K/cluster.env"
  echo "VOLUME_SNAPSHOT_CLASS=$CSI_SNAPSHOT_CLASS" >>"$K/cluster.env"
  say "CSI installed in $((SECONDS - t0))s: StorageClass $CSI_STORAGE_CLASS, VolumeSnapshotClass $CSI_SNAPSHOT_CLASS"
}
