#!/usr/bin/env bash
# Makes the Debian base image the Containerfile starts FROM, from Debian's
# own packages, for machines that reach Debian's archive but no container
# registry (ours: docker.io, quay.io and the rest do not resolve). Elsewhere
# the Containerfile's default, docker.io/library/debian:bookworm-slim, is
# the same thing pulled.
#
#   conformance/container/debian-base.sh [IMAGE]   # default localhost/faxhub-debian:bookworm
#
# debootstrap's minbase variant (essential packages and apt, as the slim
# image has), without documentation or apt lists, imported with `podman
# import`. Nothing is done when IMAGE exists already. Needs root (debootstrap
# chroots) and the podman settings of conformance/container/podman-env.sh.
set -euo pipefail
IMAGE=${1:-localhost/faxhub-debian:bookworm}
if podman image exists "$IMAGE"; then exit 0; fi
command -v debootstrap >/dev/null || { echo "debian-base: debootstrap is missing (make deps as root)" >&2; exit 1; }
MIRROR=${FAXHUB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$(mktemp -d "${TMPDIR:-/tmp}/faxhub-debian.XXXXXX")
# debootstrap mounts proc inside the tree while it works: whatever is still
# mounted there is unmounted before the tree is removed, and the removal
# never crosses into another file system.
cleanup() {
  # No mount left under the root is the usual case: grep's "no match" must
  # not fail the trap (pipefail and errexit would make a built image exit 1).
  { grep -o " $root/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf --one-file-system "$root" "$root.log"
}
trap cleanup EXIT
debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.log" 2>&1 \
  || { tail -n 20 "$root.log" >&2; rm -f "$root.log"; echo "debian-base: debootstrap failed" >&2; exit 1; }
rm -f "$root.log"
# What the slim image leaves out, and the security updates it has.
cat >"$root/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${MIRROR%/debian}/debian-security bookworm-security main
SOURCES
cat >"$root/etc/dpkg/dpkg.cfg.d/docker-excludes" <<'EXCLUDES'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EXCLUDES
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
  "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log
tar -C "$root" --numeric-owner --one-file-system -c . | podman import --change 'CMD ["bash"]' - "$IMAGE" >/dev/null
echo "debian-base: $IMAGE from $MIRROR (debootstrap minbase, bookworm)"
