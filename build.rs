// Embeds every file under patches/ (except patches/tests/) into the binary,
// so `okp apply` works from any directory with nothing beside the binary.
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
        code.push_str(&format!("    ({f:?}, include_str!({:?})),\n", root.join(f).display().to_string()));
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("patch_files.rs");
    std::fs::write(out, code).unwrap();
}
