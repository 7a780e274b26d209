//! No import circle inside the server's crates (issue 24): the crates' dependency graph is the
//! layering, and inside each crate the files import one another without a cycle, so a file's
//! dependencies can be read downwards.
//!
//! A file's imports are the paths it names through `crate::`, `super::` or a child module of its
//! own, each resolved to the deepest file that exists (`crate::events::input::MarketingEvent`
//! is `events/input.rs`). A parent declaring its children (`mod x;`) is not an import; test
//! modules are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

const CRATES: [&str; 5] = ["core", "domains", "gateway", "agents", "server"];

fn files(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read source dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut module: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|l| l == "mod") {
                module.pop();
            }
            if module == ["lib"] || module == ["main"] {
                module.clear();
            }
            out.insert(module, path);
        }
    }
    out
}

/// The deepest existing module along `path`.
fn resolve(files: &BTreeMap<Module, PathBuf>, mut path: Module) -> Module {
    while !path.is_empty() && !files.contains_key(&path) {
        path.pop();
    }
    path
}

/// The text without line comments and without an inline `mod tests { ... }` at the end.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Paths like `a::b::c` starting at byte `start` (identifiers joined by `::`).
fn path_at(text: &str, start: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest = &text[start..];
    loop {
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        parts.push(rest[..len].to_owned());
        rest = &rest[len..];
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    parts
}

fn imports(files: &BTreeMap<Module, PathBuf>, module: &Module, text: &str) -> BTreeSet<Module> {
    let code = code_of(text);
    let mut out = BTreeSet::new();
    let mut add = |target: Module| {
        if !target.is_empty() && &target != module {
            out.insert(target);
        }
    };
    let bytes = code.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    for start in 0..bytes.len() {
        // A path starts at an identifier not preceded by another identifier or `::`.
        if !is_ident(bytes[start])
            || (start > 0 && (is_ident(bytes[start - 1]) || bytes[start - 1] == b':'))
        {
            continue;
        }
        let first = path_at(&code, start);
        if first.len() < 2 {
            continue;
        }
        let mut groups: Vec<Vec<String>> = vec![first.clone()];
        // `prefix::{a, b::c}`: each item is a path under the prefix.
        let after = start + first.join("::").len();
        if code[after..].starts_with("::{") {
            if let Some(end) = code[after..].find('}') {
                for item in code[after + 3..after + end].split(',') {
                    let item = item.split(" as ").next().unwrap_or("").trim();
                    if item.is_empty() || item == "self" || item.contains('{') {
                        continue;
                    }
                    let mut p = first.clone();
                    p.extend(item.split("::").map(str::to_owned));
                    groups.push(p);
                }
            }
        }
        for path in groups {
            let target = match path[0].as_str() {
                "crate" => path[1..].to_vec(),
                "super" => {
                    // `super` of `a/b.rs` and of `a/b/mod.rs` is `a` either way.
                    let mut base = module.clone();
                    base.pop();
                    let mut rest = &path[1..];
                    while rest.first().is_some_and(|s| s == "super") {
                        base.pop();
                        rest = &rest[1..];
                    }
                    base.extend(rest.iter().cloned());
                    base
                }
                "self" | "std" | "core" | "alloc" => continue,
                child => {
                    let mut candidate = module.clone();
                    candidate.push(child.to_owned());
                    if !files.contains_key(&candidate) {
                        continue;
                    }
                    candidate.extend(path[1..].iter().cloned());
                    candidate
                }
            };
            add(resolve(files, target));
        }
    }
    out
}

/// Strongly connected components of more than one module (Tarjan, iterative over a small graph).
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<Module, usize>,
        low: BTreeMap<Module, usize>,
        stack: Vec<Module>,
        on_stack: BTreeSet<Module>,
        next: usize,
        out: Vec<Vec<Module>>,
    }
    fn visit(s: &mut State<'_>, v: &Module) {
        s.index.insert(v.clone(), s.next);
        s.low.insert(v.clone(), s.next);
        s.next += 1;
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        let targets: Vec<Module> = s
            .edges
            .get(v)
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        for w in targets {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let lw = s.low[&w];
                let lv = s.low[v];
                s.low.insert(v.clone(), lv.min(lw));
            } else if s.on_stack.contains(&w) {
                let iw = s.index[&w];
                let lv = s.low[v];
                s.low.insert(v.clone(), lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = &w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn crate_circles(root: &Path) -> Vec<String> {
    let files = files(&root.join("src"));
    let mut edges = BTreeMap::new();
    for (module, path) in &files {
        if module.is_empty() || module.last().is_some_and(|m| m == "tests") {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("read source");
        edges.insert(module.clone(), imports(&files, module, &text));
    }
    circles(&edges)
        .into_iter()
        .map(|c| {
            let names: BTreeSet<String> = c.iter().map(|m| m.join("::")).collect();
            names.into_iter().collect::<Vec<_>>().join(" <-> ")
        })
        .collect()
}

#[test]
fn no_import_circle_inside_the_server_crates() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root");
    let mut found = Vec::new();
    for krate in CRATES {
        for circle in crate_circles(&workspace.join(krate)) {
            found.push(format!("{krate}: {circle}"));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_checker_finds_a_planted_circle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("a")).expect("mkdir");
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\n").expect("write");
    std::fs::write(src.join("a/mod.rs"), "pub mod x;\npub const A: u8 = 1;\n").expect("write");
    std::fs::write(src.join("a/x.rs"), "use super::A;\nuse crate::b::B;\n").expect("write");
    std::fs::write(src.join("b.rs"), "pub const B: u8 = crate::a::x::X;\n").expect("write");
    let found = crate_circles(dir.path());
    assert_eq!(found, vec!["a::x <-> b".to_owned()], "{found:?}");
}
