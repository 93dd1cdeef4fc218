#!/usr/bin/env bash
# Build a minimal root filesystem from this machine's own binaries and write it as a tar stream,
# for `docker import` where no registry can be reached:
#
#     images/build-rootfs.sh | docker import - mleaudit/rootfs:local
#
# It holds a POSIX shell, bash, coreutils-style tools, python3 with its standard library and
# the shared libraries they link against (found with ldd), an /etc/passwd with root and nobody,
# and nothing else: no package manager, no network tools. The agent image (images/agent/)
# builds on it with `--build-arg BASE=mleaudit/rootfs:local`.
set -euo pipefail

TOOLS=(sh dash bash cat ls cp mv rm mkdir rmdir ln chmod chown chgrp touch id env sleep echo printf head tail wc
       grep sed find sort uniq tr cut date true false kill ps timeout nproc stat du df readlink
       basename dirname mktemp tee xargs python3)

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT

copy_file() {  # copy one file into the stage at the same absolute path, resolving symlinks
    local src="$1" real
    [ -e "$src" ] || return 0
    real="$(readlink -f "$src")"
    mkdir -p "$STAGE$(dirname "$src")" "$STAGE$(dirname "$real")"
    [ -e "$STAGE$real" ] || cp -p "$real" "$STAGE$real"
    if [ "$real" != "$src" ] && [ ! -e "$STAGE$src" ]; then
        ln -s "$real" "$STAGE$src"
    fi
}

copy_libs() {  # the shared libraries a binary or extension module needs
    local libs
    libs="$(ldd "$1" 2>/dev/null | awk '/=> \//{print $3} /^[[:space:]]*\/[^ ]*ld-linux/{print $1}' || true)"
    for lib in $libs; do copy_file "$lib"; done
}

# Debian's merged /usr: /bin, /lib and /lib64 are links into /usr.
mkdir -p "$STAGE/usr/bin" "$STAGE/usr/lib" "$STAGE/usr/lib64" "$STAGE/usr/sbin"
ln -s usr/bin "$STAGE/bin"; ln -s usr/lib "$STAGE/lib"; ln -s usr/lib64 "$STAGE/lib64"; ln -s usr/sbin "$STAGE/sbin"

for tool in "${TOOLS[@]}"; do
    # Prefer the system's binaries (/usr/bin) over per-user shims such as pyenv's.
    path="$(PATH=/usr/bin:/bin:/usr/sbin:/sbin type -P "$tool" || true)"
    if [ -z "$path" ]; then
        echo "build-rootfs: $tool not found, left out" >&2
        continue
    fi
    copy_file "$path"
    copy_libs "$(readlink -f "$path")"
done

# The interpreter's standard library and the libraries its extension modules link against.
PYVER="$(/usr/bin/python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
mkdir -p "$STAGE/usr/lib"
cp -a "/usr/lib/python$PYVER" "$STAGE/usr/lib/"
rm -rf "$STAGE/usr/lib/python$PYVER/test" "$STAGE/usr/lib/python$PYVER/config-"*
find "$STAGE/usr/lib/python$PYVER" -name '__pycache__' -prune -exec rm -rf {} +
for so in "/usr/lib/python$PYVER/lib-dynload/"*.so; do copy_libs "$so"; done

mkdir -p "$STAGE/etc" "$STAGE/tmp" "$STAGE/home" "$STAGE/root" "$STAGE/proc" "$STAGE/sys" "$STAGE/dev" \
         "$STAGE/usr/local/bin" "$STAGE/var/tmp"
chmod 1777 "$STAGE/tmp" "$STAGE/var/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' > "$STAGE/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$STAGE/etc/group"
printf 'hosts: files\n' > "$STAGE/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' > "$STAGE/etc/hosts"

tar -C "$STAGE" --numeric-owner --owner=0 --group=0 -cf - .
