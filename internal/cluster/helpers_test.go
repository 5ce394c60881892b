package cluster

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type forbidden struct{}

func (forbidden) Error() string { return "forbidden" }

func (forbidden) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: `pods "web-new" is forbidden: User "dev" cannot get resource "pods"`}
}

var _ apierrors.APIStatus = forbidden{}

func asRBAC(err error, re **RBACError) bool { return errors.As(err, re) }
