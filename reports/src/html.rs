//! `compare --out DIR`'s `index.html`: the comparison's tables as the terminal shows them and
//! its plots, in one static page (no script, no external resource, no timestamp), so the
//! same run writes the same bytes.

/// One plot of the report: its file name in the output directory and what it shows.
pub struct Figure<'a> {
    /// File name relative to the report (an SVG beside it).
    pub file: &'a str,
    /// Caption: what the plot shows.
    pub caption: &'a str,
}

/// `text` with the five characters HTML gives a meaning escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Inline style: the tables in a monospace block that scrolls sideways rather than wraps,
/// plots at most the page's width.
const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:100em}\
pre{font-family:monospace;font-size:13px;overflow-x:auto;background:#f6f6f6;padding:1em}\
figure{margin:2em 0}img{max-width:100%;height:auto;border:1px solid #ddd}\
figcaption{color:#444;margin-top:.5em}";

/// The report page: a title, the `tables` text verbatim, then each figure.
pub fn report(title: &str, tables: &str, figures: &[Figure]) -> String {
    let title = escape(title);
    let mut page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n\
         <h2 id=\"tables\">Tables</h2>\n<pre>{}</pre>\n<h2 id=\"plots\">Plots</h2>\n",
        escape(tables)
    );
    for f in figures {
        let (file, caption) = (escape(f.file), escape(f.caption));
        page.push_str(&format!(
            "<figure>\n<img src=\"{file}\" alt=\"{caption}\">\n<figcaption>{caption} \
             (<a href=\"{file}\">{file}</a>)</figcaption>\n</figure>\n"
        ));
    }
    page.push_str("</body>\n</html>\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_every_figure_is_linked() {
        let page = report(
            "dbench <64> & more",
            "a | b\n<tr> & \"x\"\n",
            &[
                Figure {
                    file: "cdf.svg",
                    caption: "CDF",
                },
                Figure {
                    file: "latency.svg",
                    caption: "latency",
                },
            ],
        );
        assert!(page.contains("<title>dbench &lt;64&gt; &amp; more</title>"));
        assert!(page.contains("<pre>a | b\n&lt;tr&gt; &amp; &quot;x&quot;\n</pre>"));
        assert_eq!(page.matches("<img src=").count(), 2);
        assert!(page.contains("<img src=\"latency.svg\" alt=\"latency\">"));
        assert!(!page.contains("<script"));
        assert!(page.ends_with("</html>\n"));
    }
}
