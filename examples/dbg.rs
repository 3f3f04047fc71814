use pulldown_cmark::{Options, Parser};
fn main() {
    let src = std::env::args().nth(1).unwrap().replace("\\n", "\n");
    for (e, r) in Parser::new_ext(&src, Options::ENABLE_TASKLISTS).into_offset_iter() {
        println!("{:?} {:?} {:?}", e, r, &src[r.clone()]);
    }
}
