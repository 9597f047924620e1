job "nightly" {
  id          = "nightly-report"
  type        = "batch"
  datacenters = ["*"]

  periodic {
    crons            = ["0 2 * * *"]
    prohibit_overlap = true
    time_zone        = "Europe/Berlin"
  }

  reschedule {
    attempts  = 0
    unlimited = false
  }

  group "report" {
    task "run" {
      driver = "exec"
      config {
        command = "/usr/local/bin/report"
        args    = ["--date", "yesterday"]
      }
      logs {
        max_files     = 3
        max_file_size = 5
      }
    }
  }
}
