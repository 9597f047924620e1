go test fuzz v1
string("job \"hello\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/echo\"\n      }\n    }\n  }\n}\n")
string("")
