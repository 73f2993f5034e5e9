# The pipeline dialect (internal/spec) follows urutau's source at named revisions; docs/upgrading.md
# ("Following a newer urutau") says how to move to newer ones. TestDialectProvenance is a plain
# test, so `make test` (go test ./...) runs it too.

##@ Dialect

.PHONY: dialect-check
dialect-check: ## List the urutau revisions the dialect was last compared with, and check the list against the test data and docs.
	$(GO) test ./internal/spec -run '^TestDialectProvenance$$' -count=1 -v
