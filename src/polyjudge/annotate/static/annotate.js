// polyjudge annotate: the page script (owned by the pages); it talks to the JSON API only.
