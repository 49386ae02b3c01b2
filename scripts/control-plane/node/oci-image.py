#!/usr/bin/env python3
"""An OCI image archive (an image layout in a tar) from a root filesystem directory, for
`ctr images import`: no registry can be reached here, so the real node's images are built
locally. One uncompressed layer, reproducible (times 0, sorted names, numeric owners).

    oci-image.py REF ROOTFS OUT.tar [--entrypoint ARG ...] [--cmd-json '["ARG", ...]'] [--env K=V ...]
                 [--workdir DIR] [--user UID:GID] [--expose PORT/tcp ...] [--volume DIR ...]

REF is the image's name as pods ask for it (e.g. localhost/spark-triage-busybox:1); it goes
in index.json as containerd's `io.containerd.image.name` and the OCI `ref.name`.
"""

import argparse
import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile


def layer(rootfs: str, out) -> None:
    """Writes a tar of rootfs to out: regular files, directories and links, owned by root, with
    times 0. Device nodes and fifos (debootstrap's /dev) are left out: the runtime mounts /dev."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for top, dirs, files in os.walk(rootfs):
            dirs.sort()
            for name in sorted(dirs + files):
                path = os.path.join(top, name)
                arc = os.path.relpath(path, rootfs)
                info = tar.gettarinfo(path, arcname=arc)
                if not (info.isfile() or info.isdir() or info.issym() or info.islnk()):
                    continue
                # Owners as on disk (the root filesystem is built as root: setgid binaries
                # keep their group), names dropped: the ids are what the runtime reads.
                info.uname = info.gname = ""
                info.mtime = 0
                if info.isfile():
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)


def blob(tar: tarfile.TarFile, data: bytes) -> tuple[str, int]:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
    return f"sha256:{digest}", len(data)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("ref")
    p.add_argument("rootfs")
    p.add_argument("out")
    p.add_argument("--entrypoint", nargs="*", default=[])
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--workdir", default="/")
    # JSON: its arguments may start with "--".
    p.add_argument("--cmd-json", default="[]")
    p.add_argument("--user", default="")
    p.add_argument("--expose", action="append", default=[])
    p.add_argument("--volume", action="append", default=[])
    a = p.parse_args()
    if not os.path.isdir(a.rootfs):
        sys.exit(f"oci-image: {a.rootfs}: not a directory")

    with tempfile.TemporaryFile() as layer_file:
        layer(a.rootfs, layer_file)
        size = layer_file.tell()
        layer_file.seek(0)
        h = hashlib.sha256()
        for chunk in iter(lambda: layer_file.read(1 << 20), b""):
            h.update(chunk)
        layer_digest = "sha256:" + h.hexdigest()

        extra = {}
        cmd = json.loads(a.cmd_json)
        if cmd:
            extra["Cmd"] = cmd
        if a.user:
            extra["User"] = a.user
        if a.expose:
            extra["ExposedPorts"] = {port: {} for port in a.expose}
        if a.volume:
            extra["Volumes"] = {v: {} for v in a.volume}
        config = {
            "architecture": "amd64",
            "os": "linux",
            "config": {
                "Entrypoint": a.entrypoint or None,
                "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + a.env,
                "WorkingDir": a.workdir,
            },
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        }
        config["config"].update(extra)
        tmp = a.out + ".part"
        with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
            layout = json.dumps({"imageLayoutVersion": "1.0.0"}).encode()
            info = tarfile.TarInfo("oci-layout")
            info.size = len(layout)
            tar.addfile(info, io.BytesIO(layout))
            info = tarfile.TarInfo(f"blobs/sha256/{layer_digest[7:]}")
            info.size = size
            layer_file.seek(0)
            tar.addfile(info, layer_file)
            cfg_digest, cfg_size = blob(tar, json.dumps(config, sort_keys=True).encode())
            manifest = {
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                           "digest": cfg_digest, "size": cfg_size},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                            "digest": layer_digest, "size": size}],
            }
            man_digest, man_size = blob(tar, json.dumps(manifest, sort_keys=True).encode())
            index = {
                "schemaVersion": 2,
                "manifests": [{
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": man_digest, "size": man_size,
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {"io.containerd.image.name": a.ref,
                                    "org.opencontainers.image.ref.name": a.ref},
                }],
            }
            data = json.dumps(index, sort_keys=True).encode()
            info = tarfile.TarInfo("index.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
