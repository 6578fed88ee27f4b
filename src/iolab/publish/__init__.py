"""Services behind the HTML outputs: `gather` turns the store into an `HtmlReport` (report/
then only lays it out), `site` writes a static site of a whole store (`iolab publish`)."""
