# A group scaling policy is horizontal unless it says otherwise; a task's
# scaling "cpu" / "mem" block (label in any case) is vertical_cpu /
# vertical_mem. Enabled and min stay unset for Canonicalize (true, count).
job "scale" {
  group "g" {
    count = 2
    scaling {
      max = 10
    }
    task "t" {
      driver = "exec"
      scaling "CPU" {
        max = 2000
      }
      scaling "mem" {
        max  = 4096
        type = "vertical_mem"
      }
    }
  }
}
