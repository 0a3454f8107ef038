//! `--correlate`: each -r is a capture point (a directory: its rotated set), in path order.

use std::io::{self, Write};

use crate::cli::{Config, Mode};
use crate::common::destination::{self, Destination};
use crate::common::error::Error;

use super::*;

/// `--correlate`: each -r is a capture point (a directory: its rotated set), in path order.
pub(super) fn run_correlate(config: &Config, paths: &[String]) -> Result<u8, Error> {
    let Mode::Correlate {
        json,
        decode,
        report_dir,
        fail_on,
        paint,
    } = &config.mode
    else {
        unreachable!("called for --correlate");
    };
    if paths.iter().any(|p| p == "-") {
        return Err(Error::Usage(
            "--correlate reads each capture twice: give files, not standard input".into(),
        ));
    }
    check_report_dir(config)?;
    let mut points = Vec::with_capacity(paths.len());
    let mut all_inputs = Vec::new();
    for path in paths {
        let files = expand_directories(std::slice::from_ref(path))?;
        all_inputs.extend(files.clone());
        points.push(crate::correlate::PointFiles {
            name: path.clone(),
            files,
            read: config.read_method,
        });
    }
    let inputs: Vec<&str> = all_inputs.iter().map(String::as_str).collect();
    if let Some(Destination::File(out)) = json {
        destination::refuse_input(out, &inputs)?;
    }
    if let Some(dir) = report_dir {
        for name in crate::outputs::report::correlation_dir::FILES {
            destination::refuse_input(&dir.join(name), &inputs)?;
        }
    }
    let doc = crate::correlate::correlate(&points, *decode, config.max_warnings)?;
    if let Some(dir) = report_dir {
        crate::outputs::report::correlation_dir::write_dir(dir, &doc)?;
        stderr_line!(
            "roce-sniff: report written to {}",
            crate::common::error::shown(&dir.join("index.html").to_string_lossy())
        );
    }
    let mut writer = destination::open(json.as_ref())?;
    let written = if json.is_some() {
        serde_json::to_writer_pretty(&mut writer, &doc)
            .map_err(io::Error::from)
            .and_then(|_| writeln!(writer))
    } else {
        writer.write_all(crate::outputs::report::correlation::render(&doc, *paint).as_bytes())
    };
    written
        .and_then(|_| writer.flush())
        .map_err(output_error(json.as_ref()))?;
    Ok(fail_on_code(fail_on.as_ref(), &doc.findings))
}
