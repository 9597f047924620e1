// Package java implements the java task driver: a jar (jar_path) or a main
// class (class, class_path) run by the host's JVM with jvm_options and
// args, isolated exactly as the exec driver isolates a command (it is built
// on package exec); the JDK's directory is added to the task's root when
// chroot_env does not already show it. Its fingerprint runs `java -version`
// once and reports driver.java.version, driver.java.runtime and
// driver.java.vm.
//
// It must never talk to servers or touch allocation state.
package java
