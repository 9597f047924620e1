job "hello" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
      }
    }
  }
}
