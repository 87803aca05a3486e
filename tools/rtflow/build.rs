// SPDX-License-Identifier: MIT
//! Builds tools/piongcc (Pion's GCC behind a C ABI, in Go) as a static archive and links it
//! into rtflow for `--mode pion-gcc`. Go modules come from the module proxy, pinned by
//! tools/piongcc/go.sum (`-mod=readonly`: the build never edits go.mod); the module and
//! build caches live under the repository's build/go unless GOMODCACHE/GOCACHE say otherwise.
//! Go is `$GO`, else `go` on PATH, else /usr/local/go/bin/go.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const GO_SOURCES: [&str; 4] = ["piongcc.go", "twcc.go", "go.mod", "go.sum"];
/// Where Go is when it is not on PATH (the official tarball's place).
const GO_FALLBACK: &str = "/usr/local/go/bin/go";

fn go_binary() -> PathBuf {
    if let Some(chosen) = env::var_os("GO") {
        let chosen = PathBuf::from(chosen);
        assert!(chosen.is_file(), "rtflow needs Go to build its pion-gcc controller (tools/piongcc): GO={} is not \
                                   a file; point GO at the `go` binary or unset it", chosen.display());
        return chosen;
    }
    let on_path = env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("go"))
        .find(|candidate| candidate.is_file());
    on_path.or_else(|| Some(PathBuf::from(GO_FALLBACK)).filter(|p| p.is_file())).unwrap_or_else(|| {
        panic!("rtflow needs Go (1.24 or later) to build its pion-gcc controller (tools/piongcc): \
                no `go` on PATH nor at {GO_FALLBACK}; install Go (or set GO to its binary) and build again")
    })
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let package = manifest.join("../piongcc");
    let repo = manifest.join("../..");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for source in GO_SOURCES {
        println!("cargo:rerun-if-changed={}", package.join(source).display());
    }
    for variable in ["GO", "GOMODCACHE", "GOCACHE", "GOPROXY"] {
        println!("cargo:rerun-if-env-changed={variable}");
    }
    build_archive(&go_binary(), &package, &repo.join("build/go"), &out.join("libpiongcc.a"));
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=piongcc");
}

fn build_archive(go: &Path, package: &Path, caches: &Path, archive: &Path) {
    let mut command = Command::new(go);
    command
        .current_dir(package)
        .args(["build", "-buildmode=c-archive", "-trimpath", "-o"])
        .arg(archive)
        .arg(".")
        // -modcacherw: the module cache under build/ can be removed by `make clean`.
        .env("GOFLAGS", "-mod=readonly -modcacherw -buildvcs=false")
        .env("CGO_ENABLED", "1");
    for (variable, folder) in [("GOMODCACHE", "mod"), ("GOCACHE", "cache")] {
        if env::var_os(variable).is_none() {
            command.env(variable, caches.join(folder));
        }
    }
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot run {} to build tools/piongcc: {e}", go.display()));
    assert!(status.success(), "`go build` of tools/piongcc failed ({status}); see its messages above");
}
