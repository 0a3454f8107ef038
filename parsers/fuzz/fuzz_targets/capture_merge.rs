//! Any bytes cut into two or three capture files read as one (`-r a -r b`: merged by time,
//! capture points assigned, copies across points matched): never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let parts = 2 + usize::from(selector & 1);
    let cut = rest.len() * usize::from(selector >> 1) / 128 / parts.max(1);
    let files: Vec<&[u8]> = match parts {
        2 => {
            let (a, b) = rest.split_at(cut.min(rest.len()));
            vec![a, b]
        }
        _ => {
            let (a, bc) = rest.split_at(cut.min(rest.len()));
            let (b, c) = bc.split_at(bc.len() / 2);
            vec![a, b, c]
        }
    };
    let _ = roce_sniff::run_in_memory_files(
        &files,
        &["--json", "--threads", "1", "--max-warnings", "0"],
        true,
    );
});
