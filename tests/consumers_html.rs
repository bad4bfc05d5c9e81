//! `compare --out DIR`'s index.html (issue 29 item 6): the tables compare prints and its
//! plots in one static page, loaded in headless Chromium (Debian's `chromium`, which
//! `.ci/run` installs; `$FSYNCSIM_CHROMIUM` names another). Without it: one `SKIP` line.

use crate::common;

use common::{fsyncsim_in, stderr, temp_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A short compare with --out into `name`'s fresh directory: (directory, stdout).
fn compare_out(name: &str) -> (PathBuf, String) {
    let d = temp_dir(name);
    let args = [
        "compare",
        "dbench",
        "--clients",
        "4",
        "--duration",
        "300ms",
        "--warmup",
        "100ms",
        "--out",
        "out",
    ];
    let o = fsyncsim_in(&d, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (d.join("out"), String::from_utf8(o.stdout).unwrap())
}

/// What compare printed, without the closing `wrote DIR` line.
fn tables(stdout: &str) -> &str {
    let end = stdout.rfind("wrote ").expect("the --out line");
    &stdout[..end]
}

/// HTML's escapes of the report's text undone.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The text of the page's first `<pre>` block.
fn pre_text(page: &str) -> String {
    let start = page.find("<pre>").expect("a <pre> block") + "<pre>".len();
    let end = page[start..].find("</pre>").expect("its end") + start;
    unescape(&page[start..end])
}

#[test]
fn compare_out_writes_an_index_of_its_tables_and_plots() {
    let (out, stdout) = compare_out("html-index");
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(pre_text(&page), tables(&stdout));
    for f in ["latency.svg", "cdf.svg", "attribution.svg"] {
        assert!(page.contains(&format!("<img src=\"{f}\"")), "{f}");
        assert!(out.join(f).is_file(), "{f} is written beside the page");
    }
    assert!(
        !page.contains("<script") && !page.contains("http"),
        "a static page"
    );
    // The same run writes the same page.
    let (again, _) = compare_out("html-index-again");
    assert_eq!(
        std::fs::read(again.join("index.html")).unwrap(),
        page.as_bytes()
    );
}

/// Chromium, if it runs here.
fn chromium() -> Option<PathBuf> {
    let names: Vec<PathBuf> = match std::env::var_os("FSYNCSIM_CHROMIUM") {
        Some(c) => vec![c.into()],
        None => ["chromium", "chromium-browser", "google-chrome"]
            .iter()
            .map(PathBuf::from)
            .collect(),
    };
    names.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Loads `page` (with a checking script appended) in headless Chromium and returns the DOM
/// it ends with: the script adds `<p id="verdict">images N loaded M</p>` after the load.
fn rendered(chromium: &Path, dir: &Path, page: &str) -> String {
    let script = "<script>window.addEventListener('load', () => {\
        const i = [...document.images];\
        const ok = i.filter(x => x.complete && x.naturalWidth > 0).length;\
        const p = document.createElement('p'); p.id = 'verdict';\
        p.textContent = `images ${i.length} loaded ${ok}`;\
        document.body.appendChild(p); });</script></body>";
    let check = dir.join("check.html");
    std::fs::write(&check, page.replace("</body>", script)).unwrap();
    let o = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", check.display()))
        .output()
        .expect("run chromium");
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// The verdict line's text.
fn verdict(dom: &str) -> &str {
    let start = dom.find("<p id=\"verdict\">").expect("the script ran") + 16;
    &dom[start..start + dom[start..].find("</p>").unwrap()]
}

#[test]
fn chromium_renders_the_report_with_every_plot() {
    let Some(chromium) = chromium() else {
        common::skip("consumers_html", "chromium");
        return;
    };
    let (out, stdout) = compare_out("html-chromium");
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    let dom = rendered(&chromium, &out, &page);
    assert_eq!(verdict(&dom), "images 3 loaded 3");
    assert_eq!(
        pre_text(&dom),
        tables(&stdout),
        "the tables as the terminal shows them"
    );
    // The check can fail: a plot missing from the directory does not load.
    std::fs::remove_file(out.join("cdf.svg")).unwrap();
    let dom = rendered(&chromium, &out, &page);
    assert_eq!(verdict(&dom), "images 3 loaded 2");
}
