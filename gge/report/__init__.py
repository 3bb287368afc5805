"""What a run shows people: report.md's tables (:mod:`.markdown`) and report.html (:mod:`.html`)."""
