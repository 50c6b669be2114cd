// Embeds every file under patches/ (except patches/tests/) into the binary,
// so `okp apply` works from any directory with nothing beside the binary.
//
// Each file is included as `concat!(env!("CARGO_MANIFEST_DIR"), "/patches/…")`, resolved when the
// library itself is compiled, never as an absolute path written by this script: cargo does not
// re-run a build script for a second checkout that shares the target directory (its fingerprint
// does not hold the checkout's path), so a written path would embed the first checkout's patch set
// into the second one's binary. The list of files is checked against patches/ by a unit test
// (`patchset::tests::the_embedded_patch_set_is_this_checkouts`).
use std::path::Path;

fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            if p.strip_prefix(root).map(|r| r == Path::new("tests")).unwrap_or(false) {
                continue;
            }
            walk(&p, root, out);
        } else {
            out.push(p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("patches");
    println!("cargo:rerun-if-changed=patches");
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    let mut code = String::from("/// Every file under patches/, as (path under patches/, contents).\npub static PATCH_FILES: &[(&str, &str)] = &[\n");
    for f in &files {
        let rel = format!("/patches/{f}");
        code.push_str(&format!("    ({f:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), {rel:?}))),\n"));
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("patch_files.rs");
    std::fs::write(out, code).unwrap();
}
