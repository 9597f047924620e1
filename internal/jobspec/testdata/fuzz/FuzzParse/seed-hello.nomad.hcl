go test fuzz v1
string("# A first job: one batch task that greets and exits, run by raw_exec.\n# Submit it to a dev agent with:  go run ./cmd/drover job run examples/hello.nomad.hcl\njob \"hello\" {\n  datacenters = [\"*\"]\n  type        = \"batch\"\n\n  group \"greet\" {\n    count = 1\n\n    task \"say\" {\n      driver = \"raw_exec\"\n\n      config {\n        command = \"/bin/sh\"\n        args    = [\"-c\", \"echo \\\"hello from ${NOMAD_ALLOC_NAME} on $(hostname)\\\"\"]\n      }\n\n      resources {\n        cpu    = 20\n        memory = 32\n      }\n    }\n  }\n}\n")
string("")
