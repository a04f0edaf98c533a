export interface SignupRequest {
  id: string;
  ip: string;
  email: string;
  password: string;
}
export function createApp(destination?: { write(line: string): void }): {
  signup(request: SignupRequest): void;
};
